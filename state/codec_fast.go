package state

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// The decoding fast path: Unmarshal and ParseItem first read their input
// with the hand-written scanner of codec_fast_scan.go, which handles the
// JSON that Marshal and the item constructors write (in any key order,
// with any whitespace) in one pass and with a few allocations per item.
// Whatever it does not handle — keys that are escaped, differ from a field
// name only in case or repeat, unknown fields, numbers that are not plain
// integers, deep nesting, any error — makes it give up, and the
// encoding/json path decodes the input again and reports the error with
// its JSON path. Rule: a fast path may only ever return what the
// encoding/json path returns for the same input (codec_fast_test.go
// checks it by differential fuzzing).

// fastDec holds the scratch buffers of one decoding.
type fastDec struct {
	scratch []byte // unescaped strings
	// The text and the call ID of the item being parsed, one after the
	// other (the text up to textEnd). They become one string, which the
	// two fields share: one allocation an item.
	text    []byte
	textEnd int
	name    string // the name of the item being parsed
	// names holds the tool and agent names decoded so far, so that the
	// items of one tool share one copy of its name; nil not to share.
	names map[string]string
}

// quoted is a string as the input has it: still escaped, with its flags.
type quoted struct {
	q     []byte
	flags uint8
}

// optQuoted scans a string or null (which leaves *dst as it is).
func optQuoted(s *jscan, dst *quoted) bool {
	if s.null() {
		return true
	}
	var ok bool
	dst.q, dst.flags, ok = s.str()
	return ok
}

// appendTo appends the string unescaped.
func (q quoted) appendTo(b []byte) []byte { return appendUnquoted(b, q.q, q.flags) }

// setStrings gives the item parsed last its text, call ID and name.
func (d *fastDec) setStrings(it *Item) {
	it.name = d.name
	if len(d.text) == 0 {
		return
	}
	all := string(d.text)
	it.text, it.callID = all[:d.textEnd], all[d.textEnd:]
}

// intern returns q unescaped, shared with the names decoded before it.
func (d *fastDec) intern(q quoted) string {
	if len(q.q) == 0 {
		return ""
	}
	d.scratch = q.appendTo(d.scratch[:0])
	if v, ok := d.names[string(d.scratch)]; ok {
		return v
	}
	v := string(d.scratch)
	if d.names != nil {
		d.names[v] = v
	}
	return v
}

// Indexes of the item fields ParseItem reads, and their names.
const (
	fieldType = iota
	fieldRole
	fieldCallID
	fieldName
	fieldArguments
	fieldOutput
	fieldContent
	fieldSummary
	numItemFields
)

var itemFieldNames = [numItemFields]string{"type", "role", "call_id", "name", "arguments", "output", "content", "summary"}

// itemField returns the index of key among names, -1 for another field,
// and -2 for a key that encoding/json would match to a field by case
// folding only.
func itemField(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, n := range names {
		if asciiFoldEq(key, n) {
			return -2
		}
	}
	return -1
}

// null consumes a null and reports true, or reports false and consumes
// nothing.
func (s *jscan) null() bool { return s.peek() == 'n' && s.literal("null") }

// optString scans a string or null into *dst (a null leaves it as is).
func (d *fastDec) optString(s *jscan, dst *string) bool {
	if s.null() {
		return true
	}
	v, ok := s.string(&d.scratch)
	*dst = v
	return ok
}

// skipString scans a string or null and discards it.
func skipString(s *jscan) bool {
	if s.null() {
		return true
	}
	_, _, ok := s.str()
	return ok
}

// item parses an item's JSON at s as ParseItem does, leaving its strings
// in d.text for setStrings and its raw bytes to the caller.
func (d *fastDec) item(s *jscan, kind Kind) (Item, bool) {
	var (
		seen               uint16
		typ                []byte
		callID, name, args quoted
		call               = kind.IsCall()
		output             = kind.IsOutput()
	)
	d.text = d.text[:0]
	o := s.object()
	for {
		key, more, ok := o.next(s)
		if !ok {
			return Item{}, false
		}
		if !more {
			break
		}
		f := itemField(key, itemFieldNames[:])
		if f == -2 || f >= 0 && seen&(1<<f) != 0 {
			return Item{}, false
		}
		if f >= 0 {
			seen |= 1 << f
		}
		switch f {
		case fieldType:
			if !s.null() {
				q, flags, ok := s.str()
				if !ok || flags&strEscaped != 0 {
					return Item{}, false
				}
				typ = q
			}
		case fieldCallID:
			if call || output {
				ok = optQuoted(s, &callID)
			} else {
				ok = skipString(s)
			}
		case fieldName:
			if call {
				ok = optQuoted(s, &name)
			} else {
				ok = skipString(s)
			}
		case fieldArguments:
			if call {
				ok = optQuoted(s, &args)
			} else {
				ok = skipString(s)
			}
		case fieldRole:
			ok = skipString(s)
		case fieldOutput, fieldContent:
			if (f == fieldOutput) == output && (output || kind.isMessage()) {
				ok = d.content(s)
			} else {
				ok = s.value(1)
			}
		case fieldSummary:
			ok = d.summary(s, kind == KindReasoning)
		default:
			ok = s.value(1)
		}
		if !ok {
			return Item{}, false
		}
	}
	switch {
	case kind.isMessage():
		if string(typ) != "message" && len(typ) != 0 {
			return Item{}, false
		}
	case kind == KindReasoning:
		if string(typ) != "reasoning" {
			return Item{}, false
		}
	case call:
		if string(typ) != "function_call" || len(callID.q) == 0 || len(name.q) == 0 {
			return Item{}, false
		}
	case output:
		if string(typ) != "function_call_output" || len(callID.q) == 0 {
			return Item{}, false
		}
	}
	if call {
		d.text = args.appendTo(d.text) // the only text of a call
	}
	d.textEnd = len(d.text)
	if call || output {
		d.text = callID.appendTo(d.text)
	}
	d.name = ""
	if call {
		d.name = d.intern(name)
	}
	return Item{kind: kind}, true
}

func (k Kind) isMessage() bool {
	return k == KindUserMessage || k == KindSystemMessage || k == KindAssistantMessage
}

// content reads a message content or output value as contentText does,
// appending its text to d.text.
func (d *fastDec) content(s *jscan) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case '"':
		q, flags, ok := s.str()
		d.text = appendUnquoted(d.text, q, flags)
		return ok
	}
	partFields := []string{"text", "refusal"}
	for a := s.array(); ; {
		more, ok := a.next(s)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		if s.null() {
			continue
		}
		var (
			parts [2][]byte
			flags [2]uint8
			seen  uint8
		)
		for o := s.object(); ; {
			key, more, ok := o.next(s)
			if !ok {
				return false
			}
			if !more {
				break
			}
			f := itemField(key, partFields)
			switch {
			case f == -2 || f >= 0 && seen&(1<<f) != 0:
				return false
			case f >= 0:
				seen |= 1 << f
				if !s.null() {
					parts[f], flags[f], ok = s.str()
				}
			default:
				ok = s.value(3)
			}
			if !ok {
				return false
			}
		}
		d.text = appendUnquoted(d.text, parts[0], flags[0])
		d.text = appendUnquoted(d.text, parts[1], flags[1])
	}
}

// summary reads a reasoning summary, appending its texts, one a line, to
// d.text when keep is set.
func (d *fastDec) summary(s *jscan, keep bool) bool {
	if s.null() {
		return true
	}
	summaryFields := []string{"type", "text"}
	for i, a := 0, s.array(); ; i++ {
		more, ok := a.next(s)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		if keep && i > 0 {
			d.text = append(d.text, '\n')
		}
		if s.null() {
			continue
		}
		var seen uint8
		for o := s.object(); ; {
			key, more, ok := o.next(s)
			if !ok {
				return false
			}
			if !more {
				break
			}
			f := itemField(key, summaryFields)
			switch {
			case f == -2 || f >= 0 && seen&(1<<f) != 0:
				return false
			case f < 0:
				ok = s.value(3)
			case f == 1 && keep && s.peek() == '"':
				var q []byte
				var flags uint8
				q, flags, ok = s.str()
				d.text = appendUnquoted(d.text, q, flags)
			default:
				ok = skipString(s)
			}
			if f >= 0 {
				seen |= 1 << f
			}
			if !ok {
				return false
			}
		}
	}
}

// parseItemFast is ParseItem's fast path: the item, with a copy of raw, or
// false.
func parseItemFast(kind Kind, raw []byte) (Item, bool) {
	var d fastDec
	s := jscan{b: raw}
	s.skipWS()
	it, ok := d.item(&s, kind)
	if !ok || !s.end() {
		return Item{}, false
	}
	d.setStrings(&it)
	it.raw = bytes.Clone(raw)
	return it, true
}

// items reads a list of wire items as decodeItems would decode it. atMost
// bounds the number of items the list should hold, or is 0.
func (d *fastDec) items(s *jscan, atMost int64) ([]Item, bool) {
	if s.null() {
		return nil, true
	}
	var out []Item
	if n := int64(len(s.b)-s.i) / minWireItemLen; atMost > 0 {
		out = make([]Item, 0, min(n, atMost))
	}
	for a := s.array(); ; {
		more, ok := a.next(s)
		if !ok {
			return nil, false
		}
		if !more {
			break
		}
		it, ok := d.wireItem(s)
		if !ok {
			return nil, false
		}
		out = append(out, it)
	}
	if len(out) == 0 {
		return nil, true
	}
	return out, true
}

// minWireItemLen is less than the length of the shortest valid wire item,
// such as {"seq":1,"kind":"reasoning","raw":{"type":"reasoning"}}.
const minWireItemLen = 32

// wireItem reads one {"seq", "kind", "name", "raw"} object.
func (d *fastDec) wireItem(s *jscan) (Item, bool) {
	var (
		seen       uint8
		seq        int64
		kind       Kind
		name       quoted
		it         Item
		raw        []byte // the raw value as it is in the input
		parsed     bool   // it was parsed from raw
		whitespace bool   // raw has whitespace to compact
	)
	for o := s.object(); ; {
		key, more, ok := o.next(s)
		if !ok {
			return Item{}, false
		}
		if !more {
			break
		}
		var f uint8
		switch string(key) {
		case "seq":
			f = 1
			if !s.null() {
				seq, ok = s.int64(64)
			}
		case "kind":
			f = 2
			var q []byte
			var flags uint8
			q, flags, ok = s.str()
			kind = kindByName(q)
			ok = ok && flags&strEscaped == 0 && kind != 0
		case "name":
			f = 4
			ok = optQuoted(s, &name)
		case "raw":
			f = 8
			start, ws := s.i, s.ws
			s.ws = false
			if kind != 0 {
				it, ok = d.item(s, kind)
				parsed = true
			} else {
				ok = s.peek() == '{' && s.value(0)
			}
			raw, whitespace = s.b[start:s.i], s.ws
			s.ws = s.ws || ws
		default:
			return Item{}, false
		}
		if !ok || seen&f != 0 {
			return Item{}, false
		}
		seen |= f
	}
	if kind == 0 || raw == nil || len(name.q) > 0 && !kind.IsOutput() {
		return Item{}, false
	}
	if !parsed {
		sub := jscan{b: raw}
		var ok bool
		if it, ok = d.item(&sub, kind); !ok {
			return Item{}, false
		}
	}
	if whitespace {
		it.raw = compact(raw)
	} else {
		it.raw = bytes.Clone(raw)
	}
	if len(name.q) > 0 {
		d.name = d.intern(name)
	}
	d.setStrings(&it)
	it.seq = seq
	return it, true
}

// kindByName returns the kind named q, or 0.
func kindByName(q []byte) Kind {
	for k := KindUserMessage; int(k) < len(kindNames); k++ {
		if kindNames[k] == string(q) {
			return k
		}
	}
	return 0
}

// int64Object reads an object of integer fields (Boundary, Usage) whose
// names are names, into dst.
func int64Object(s *jscan, names []string, dst []*int64) bool {
	var seen uint32
	for o := s.object(); ; {
		key, more, ok := o.next(s)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		f := -1
		for i, n := range names {
			if string(key) == n {
				f = i
			}
		}
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if !s.null() {
			if *dst[f], ok = s.int64(64); !ok {
				return false
			}
		}
	}
}

// delegate decodes the value at s into v with encoding/json, strictly, as
// decodeStrict decodes the value of a field. list says v is a slice, which
// a run keeps nil when empty.
func delegate(s *jscan, v any, list bool) bool {
	raw, _, ok := s.span(1)
	if !ok {
		return false
	}
	if string(raw) == "null" || list && string(raw) == "[]" {
		return true // encoding/json would leave v nil, or empty for nilIfEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// run reads a run object as decodeRunPayload does, including its checks.
func (d *fastDec) run(s *jscan) (*Run, bool) {
	var (
		f                     fastRun
		id                    string
		nextSeq               int64
		seen                  uint32
		input, items, context []Item
		turn, maxTurns, from  int64
	)
	d.names = make(map[string]string)
	for o := s.object(); ; {
		key, more, ok := o.next(s)
		if !ok {
			return nil, false
		}
		if !more {
			break
		}
		var bit uint32
		switch string(key) {
		case "id":
			bit = 1 << 0
			id, ok = s.string(&d.scratch)
			f.ID = &id
		case "agent":
			bit = 1 << 1
			ok = d.optString(s, &f.Agent)
		case "turn":
			bit = 1 << 2
			ok = s.null() || intInto(s, &turn)
		case "max_turns":
			bit = 1 << 3
			ok = s.null() || intInto(s, &maxTurns)
		case "version":
			bit = 1 << 4
			ok = s.null() || int64Into(s, &f.Version)
		case "next_seq":
			bit = 1 << 5
			nextSeq, ok = s.int64(64)
			f.NextSeq = &nextSeq
		case "input":
			bit = 1 << 6
			input, ok = d.items(s, 0)
		case "items":
			bit = 1 << 7
			// The items have distinct positions below next_seq.
			items, ok = d.items(s, nextSeq-1)
		case "response":
			bit = 1 << 8
			ok = s.null() || int64Object(s, []string{"start", "end", "outputs_end"},
				[]*int64{&f.Response.Start, &f.Response.End, &f.Response.OutputsEnd})
		case "context":
			bit = 1 << 9
			context, ok = d.items(s, 0)
		case "context_from":
			bit = 1 << 10
			ok = s.null() || intInto(s, &from)
		case "pending":
			bit = 1 << 11
			ok = delegate(s, &f.Pending, true)
		case "decisions":
			bit = 1 << 12
			ok = delegate(s, &f.Decisions, true)
		case "guardrails":
			bit = 1 << 13
			ok = delegate(s, &f.Guardrails, true)
		case "usage":
			bit = 1 << 14
			u := &f.Usage
			ok = s.null() || int64Object(s, []string{"requests", "input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens"},
				[]*int64{&u.Requests, &u.InputTokens, &u.OutputTokens, &u.ReasoningTokens, &u.CachedTokens})
		case "session_id":
			bit = 1 << 15
			ok = d.optString(s, &f.SessionID)
		case "session_watermark":
			bit = 1 << 16
			ok = s.null() || int64Into(s, &f.Watermark)
		case "trace":
			bit = 1 << 17
			ok = delegate(s, &f.Trace, false)
		case "final_output":
			bit = 1 << 18
			ok = d.optString(s, &f.Final)
		case "finished":
			bit = 1 << 19
			if !s.null() {
				f.Finished, ok = s.boolean()
			}
		case "extension":
			bit = 1 << 20
			ok = delegate(s, &f.Extension, false)
		default:
			return nil, false
		}
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	if f.ID == nil || f.NextSeq == nil {
		return nil, false
	}
	f.Turn, f.MaxTurns, f.ContextFrom = int(turn), int(maxTurns), int(from)
	r, err := newDecodedRun(&f, input, items, context)
	if err != nil {
		return nil, false
	}
	return r, true
}

// intInto scans an integer that fits in a Go int.
func intInto(s *jscan, dst *int64) bool {
	n, ok := s.int64(strconv.IntSize)
	*dst = n
	return ok
}

// int64Into scans an integer that fits in an int64.
func int64Into(s *jscan, dst *int64) bool {
	n, ok := s.int64(64)
	*dst = n
	return ok
}

// unmarshalFast is Unmarshal's fast path for a checkpoint of the current
// version: the run, or nil. With verification keys it finds the run's
// JSON and checks the signature before decoding it.
func unmarshalFast(data []byte, keys map[string][]byte) *Run {
	var (
		d       fastDec
		s       = jscan{b: data}
		seen    uint8
		run     *Run
		payload []byte
		sig     *wireSignature
	)
	s.skipWS()
	for o := s.object(); ; {
		key, more, ok := o.next(&s)
		if !ok {
			return nil
		}
		if !more {
			break
		}
		var bit uint8
		switch string(key) {
		case "schema":
			bit = 1
			q, flags, ok2 := s.str()
			ok = ok2 && flags&strEscaped == 0 && string(q) == SchemaName
		case "version":
			bit = 2
			v, ok2 := s.int64(strconv.IntSize)
			ok = ok2 && v == SchemaVersion
		case "run":
			bit = 4
			start := s.i
			if s.peek() != '{' {
				return nil
			}
			if keys == nil {
				run, ok = d.run(&s)
			} else {
				ok = s.value(0)
			}
			payload = data[start:s.i]
		case "signature":
			bit = 8
			if !s.null() {
				sig = new(wireSignature)
				ok = d.signature(&s, sig)
			}
		default:
			return nil
		}
		if !ok || seen&bit != 0 {
			return nil
		}
		seen |= bit
	}
	if !s.end() || seen&7 != 7 {
		return nil
	}
	if keys != nil {
		if verify(keys, sig, SchemaName, SchemaVersion, payload) != nil {
			return nil
		}
		sub := jscan{b: payload}
		var ok bool
		if run, ok = d.run(&sub); !ok || !sub.end() {
			return nil
		}
	}
	return run
}

// signature reads a {"key_id", "mac"} object.
func (d *fastDec) signature(s *jscan, sig *wireSignature) bool {
	var seen uint8
	for o := s.object(); ; {
		key, more, ok := o.next(s)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		var bit uint8
		switch string(key) {
		case "key_id":
			bit = 1
			ok = d.optString(s, &sig.KeyID)
		case "mac":
			bit = 2
			ok = d.optString(s, &sig.MAC)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}
