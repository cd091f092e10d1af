package state

import (
	"encoding/json"
	"strconv"
)

// The encoding fast path: Marshal writes the checkpoint by hand, byte for
// byte what encoding/json makes of the wire shapes (marshalWireJSON, the
// reference; codec_fast_test.go compares them): the items, which are most
// of a checkpoint, without reflection and without re-validating each
// item's JSON through a json.RawMessage, and the envelope around the run
// without encoding the run twice. Parts that are rare or small (pending
// approvals, decisions, guardrail results, trace, extensions) go through
// encoding/json. Anything the fast path does not handle (an item of an
// invalid kind, a value encoding/json refuses) makes marshalWire use the
// reference, for its error.

// appendCheckpoint appends the envelope of w, signed when cfg has a key,
// without indentation.
func appendCheckpoint(b []byte, w *wireRun, cfg *marshalConfig) ([]byte, bool) {
	b = append(b, `{"schema":`...)
	b = appendString(b, SchemaName)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, `,"run":`...)
	start := len(b)
	b, ok := appendRun(b, w)
	if !ok {
		return nil, false
	}
	if cfg.key != nil {
		sig := sign(cfg.keyID, cfg.key, SchemaName, SchemaVersion, b[start:])
		b = append(b, `,"signature":{"key_id":`...)
		b = appendString(b, sig.KeyID)
		b = append(b, `,"mac":`...)
		b = appendString(b, sig.MAC)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// checkpointSize estimates the length of w's checkpoint.
func checkpointSize(w *wireRun) int {
	n := 512 + len(w.ID) + len(w.Agent) + len(w.SessionID) + len(w.Final)
	for _, l := range [][]wireItem{w.Input, w.Items, w.Context} {
		for _, it := range l {
			n += 48 + len(it.Name) + len(it.Raw)
		}
	}
	return n
}

// appendRun appends json.Marshal(w)'s bytes, and false when w holds
// something only encoding/json handles.
func appendRun(b []byte, w *wireRun) ([]byte, bool) {
	ok := true
	b = append(b, `{"id":`...)
	b = appendString(b, w.ID)
	b = append(b, `,"agent":`...)
	b = appendString(b, w.Agent)
	b = appendIntField(b, "turn", int64(w.Turn))
	b = appendIntField(b, "max_turns", int64(w.MaxTurns))
	b = appendIntField(b, "version", w.Version)
	b = appendIntField(b, "next_seq", w.NextSeq)
	b = append(b, `,"input":`...)
	b, ok = appendWireItems(b, w.Input, ok)
	b = append(b, `,"items":`...)
	b, ok = appendWireItems(b, w.Items, ok)
	b = append(b, `,"response":{"start":`...)
	b = strconv.AppendInt(b, w.Response.Start, 10)
	b = appendIntField(b, "end", w.Response.End)
	b = appendIntField(b, "outputs_end", w.Response.OutputsEnd)
	b = append(b, `},"context":`...)
	b, ok = appendWireItems(b, w.Context, ok)
	b = appendIntField(b, "context_from", int64(w.ContextFrom))
	b = append(b, `,"pending":`...)
	b, ok = appendList(b, w.Pending, ok)
	b = append(b, `,"decisions":`...)
	b, ok = appendList(b, w.Decisions, ok)
	b = append(b, `,"guardrails":`...)
	b, ok = appendList(b, w.Guardrails, ok)
	u := w.Usage
	b = append(b, `,"usage":{"requests":`...)
	b = strconv.AppendInt(b, u.Requests, 10)
	b = appendIntField(b, "input_tokens", u.InputTokens)
	b = appendIntField(b, "output_tokens", u.OutputTokens)
	b = appendIntField(b, "reasoning_tokens", u.ReasoningTokens)
	b = appendIntField(b, "cached_tokens", u.CachedTokens)
	b = append(b, '}')
	if w.SessionID != "" {
		b = appendField(b, "session_id", w.SessionID)
	}
	b = appendIntField(b, "session_watermark", w.Watermark)
	if len(w.Trace) > 0 {
		b = append(b, `,"trace":`...)
		b, ok = appendJSON(b, w.Trace, ok)
	}
	if w.Final != "" {
		b = appendField(b, "final_output", w.Final)
	}
	b = append(b, `,"finished":`...)
	b = strconv.AppendBool(b, w.Finished)
	if len(w.Extension) > 0 {
		b = append(b, `,"extension":`...)
		b, ok = appendJSON(b, w.Extension, ok)
	}
	return append(b, '}'), ok
}

func appendIntField(b []byte, name string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// appendWireItems appends a list of items; ok carries the failure of an
// earlier part through.
func appendWireItems(b []byte, items []wireItem, ok bool) ([]byte, bool) {
	if !ok {
		return b, false
	}
	if items == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, it := range items {
		if !it.Kind.Valid() {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"seq":`...)
		b = strconv.AppendInt(b, it.Seq, 10)
		b = append(b, `,"kind":"`...)
		b = append(b, kindNames[it.Kind]...)
		b = append(b, '"')
		if it.Name != "" {
			b = appendField(b, "name", it.Name)
		}
		b = append(b, `,"raw":`...)
		if b, ok = appendRawJSON(b, it.Raw); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendRawJSON appends raw as encoding/json writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped. Items' JSON almost
// always is already so, and is then copied after one validating scan.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	s := jscan{b: raw}
	if s.value(0) && s.i == len(raw) && !s.ws && s.flags&strHTML == 0 {
		return append(b, raw...), true
	}
	return appendJSON(b, raw, true)
}

// appendList appends a slice that encoding/json encodes.
func appendList[T any](b []byte, l []T, ok bool) ([]byte, bool) {
	switch {
	case !ok:
		return b, false
	case l == nil:
		return append(b, "null"...), true
	case len(l) == 0:
		return append(b, "[]"...), true
	}
	return appendJSON(b, l, true)
}

// appendJSON appends json.Marshal(v).
func appendJSON(b []byte, v any, ok bool) ([]byte, bool) {
	if !ok {
		return b, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, out...), true
}
