package state

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
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

// optQuoted scans a string or null (which leaves *dst as it is), keeping
// it in *dst when keep is set.
func optQuoted(s *jscan, dst *quoted, keep bool) bool {
	if s.null() {
		return true
	}
	q, flags, ok := s.str()
	if keep {
		*dst = quoted{q, flags}
	}
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

// fieldSet records the fields of an object read so far.
type fieldSet uint32

// first marks field f read and reports whether it was not read before.
// encoding/json lets the last of repeated fields win; the fast paths leave
// repeated fields to it.
func (fs *fieldSet) first(f int) bool {
	if *fs&(1<<f) != 0 {
		return false
	}
	*fs |= 1 << f
	return true
}

// field returns the index of key among names, the fields of an object
// decoded without DisallowUnknownFields, or -1 for another key. It reports
// false for a key encoding/json would match to a field by case folding
// only, and for a field read before.
func (fs *fieldSet) field(key []byte, names []string) (int, bool) {
	for i, n := range names {
		if string(key) == n {
			return i, fs.first(i)
		}
	}
	for _, n := range names {
		if asciiFoldEq(key, n) {
			return -1, false
		}
	}
	return -1, true
}

// null consumes a null and reports true, or reports false and consumes
// nothing.
func (s *jscan) null() bool { return s.peek() == 'n' && s.literal("null") }

// optString scans a string or null into *dst (a null leaves it as is).
func (d *fastDec) optString(s *jscan, dst *string) bool {
	return s.null() || d.string(s, dst)
}

// string scans a string into *dst.
func (d *fastDec) string(s *jscan, dst *string) bool {
	v, ok := s.string(&d.scratch)
	*dst = v
	return ok
}

// item parses an item's JSON at s as ParseItem does, leaving its strings
// in d.text for setStrings and its raw bytes to the caller.
func (d *fastDec) item(s *jscan, kind Kind) (Item, bool) {
	if kind.isTyped() {
		return Item{}, false // parseTyped reads these
	}
	var (
		seen               fieldSet
		typ                []byte
		callID, name, args quoted
		call               = kind.IsCall()
		output             = kind.IsOutput()
	)
	d.text = d.text[:0]
	ok := s.members(func(key []byte) bool {
		f, ok := seen.field(key, itemFieldNames[:])
		if !ok {
			return false
		}
		switch f {
		case fieldType:
			if s.null() {
				return true
			}
			q, flags, ok := s.str()
			typ = q
			return ok && flags&strEscaped == 0
		case fieldCallID:
			return optQuoted(s, &callID, call || output)
		case fieldName:
			return optQuoted(s, &name, call)
		case fieldArguments:
			return optQuoted(s, &args, call)
		case fieldRole:
			return optQuoted(s, nil, false)
		case fieldOutput, fieldContent:
			if (f == fieldOutput) == output && (output || kind.isMessage()) {
				return d.content(s)
			}
		case fieldSummary:
			return d.summary(s, kind == KindReasoning)
		}
		return s.value(1)
	})
	if !ok {
		return Item{}, false
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
	return s.elements(func() bool {
		part, ok := pair(s, "text", "refusal")
		d.text = part[1].appendTo(part[0].appendTo(d.text))
		return ok
	})
}

// summary reads a reasoning summary, appending its texts, one a line, to
// d.text when keep is set.
func (d *fastDec) summary(s *jscan, keep bool) bool {
	if s.null() {
		return true
	}
	first := true
	return s.elements(func() bool {
		if keep && !first {
			d.text = append(d.text, '\n')
		}
		first = false
		part, ok := pair(s, "type", "text")
		if keep {
			d.text = part[1].appendTo(d.text)
		}
		return ok
	})
}

// pair reads a null or an object whose fields a and b, if present, are
// strings or null, as encoding/json decodes it into a struct of the two.
func pair(s *jscan, a, b string) ([2]quoted, bool) {
	var (
		v    [2]quoted
		seen fieldSet
	)
	if s.null() {
		return v, true
	}
	names := [2]string{a, b}
	ok := s.members(func(key []byte) bool {
		f, ok := seen.field(key, names[:])
		if !ok {
			return false
		}
		if f < 0 {
			return s.value(3)
		}
		return optQuoted(s, &v[f], true)
	})
	return v, ok
}

// parseItemFast is ParseItem's fast path: the item, with a copy of raw, or
// false.
func parseItemFast(kind Kind, raw []byte) (Item, bool) {
	d := itemDecs.Get().(*fastDec)
	defer d.release()
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

// itemDecs keeps the scratch buffers of ParseItem between calls.
var itemDecs = sync.Pool{New: func() any { return new(fastDec) }}

// maxPooledBuffer is the largest scratch buffer itemDecs keeps.
const maxPooledBuffer = 64 << 10

// release puts d back into itemDecs, unless its buffers grew large.
func (d *fastDec) release() {
	if cap(d.text) > maxPooledBuffer || cap(d.scratch) > maxPooledBuffer {
		return
	}
	*d = fastDec{text: d.text[:0], scratch: d.scratch[:0]}
	itemDecs.Put(d)
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
	ok := s.elements(func() bool {
		it, ok := d.wireItem(s)
		out = append(out, it)
		return ok
	})
	if !ok || len(out) == 0 {
		return nil, ok
	}
	return out, true
}

// minWireItemLen is less than the length of the shortest valid wire item,
// such as {"seq":1,"kind":"reasoning","raw":{"type":"reasoning"}}.
const minWireItemLen = 32

// wireItem reads one {"seq", "kind", "name", "raw"} object.
func (d *fastDec) wireItem(s *jscan) (Item, bool) {
	var (
		seen       fieldSet
		seq        int64
		kind       Kind
		name       quoted
		it         Item
		raw        []byte // the raw value as it is in the input
		parsed     bool   // it was parsed from raw
		whitespace bool   // raw has whitespace to compact
	)
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "seq":
			return seen.first(0) && optInt64(s, &seq)
		case "kind":
			q, flags, ok := s.str()
			kind = kindByName(q)
			return seen.first(1) && ok && flags&strEscaped == 0 && kind != 0
		case "name":
			return seen.first(2) && optQuoted(s, &name, true)
		case "raw":
			if !seen.first(3) {
				return false
			}
			start, ws := s.i, s.ws
			s.ws = false
			var ok bool
			if kind != 0 && !kind.isTyped() {
				it, ok = d.item(s, kind)
				parsed = true
			} else {
				ok = s.peek() == '{' && s.value(0)
			}
			raw, whitespace = s.b[start:s.i], s.ws
			s.ws = s.ws || ws
			return ok
		}
		return false
	})
	if !ok || kind == 0 || raw == nil || len(name.q) > 0 && !kind.IsOutput() {
		return Item{}, false
	}
	if kind.isTyped() {
		return d.typedItem(kind, raw, whitespace, name, seq)
	}
	if !parsed {
		sub := jscan{b: raw}
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

// typedItem builds a wire item of a kind that parseTyped reads, as
// decodeItems does: from its compacted raw JSON, named name when it is an
// output.
func (d *fastDec) typedItem(kind Kind, raw []byte, whitespace bool, name quoted, seq int64) (Item, bool) {
	if whitespace {
		raw = compact(raw)
	}
	it, err := parseTyped(kind, raw)
	if err != nil {
		return Item{}, false
	}
	if len(name.q) > 0 {
		it.name = d.intern(name)
	}
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

// int64Object reads a null or an object of integer fields (Boundary,
// Usage) whose names are names, into dst.
func int64Object(s *jscan, names []string, dst []*int64) bool {
	var seen fieldSet
	return s.null() || s.members(func(key []byte) bool {
		for i, n := range names {
			if string(key) == n {
				return seen.first(i) && optInt64(s, dst[i])
			}
		}
		return false
	})
}

// optInt scans an integer that fits in a Go int, or null (which leaves
// *dst as it is).
func optInt(s *jscan, dst *int) bool {
	if s.null() {
		return true
	}
	n, ok := s.int64(strconv.IntSize)
	*dst = int(n)
	return ok
}

// optInt64 scans an integer or null (which leaves *dst as it is).
func optInt64(s *jscan, dst *int64) bool {
	if s.null() {
		return true
	}
	n, ok := s.int64(64)
	*dst = n
	return ok
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
// read reports that it read the object; then the run or the error of its
// checks (see [Run.check]) is the one decodeRunPayload returns.
func (d *fastDec) run(s *jscan) (r *Run, read bool, err error) {
	var (
		f                     fastRun
		id                    string
		nextSeq               int64
		seen                  fieldSet
		input, items, context []Item
	)
	d.names = make(map[string]string)
	read = s.members(func(key []byte) bool {
		switch string(key) {
		case "id":
			f.ID = &id
			return seen.first(0) && d.string(s, &id)
		case "agent":
			return seen.first(1) && d.optString(s, &f.Agent)
		case "turn":
			return seen.first(2) && optInt(s, &f.Turn)
		case "max_turns":
			return seen.first(3) && optInt(s, &f.MaxTurns)
		case "version":
			return seen.first(4) && optInt64(s, &f.Version)
		case "next_seq":
			f.NextSeq = &nextSeq
			return seen.first(5) && s.peek() != 'n' && optInt64(s, &nextSeq)
		case "input":
			var ok bool
			input, ok = d.items(s, 0)
			return seen.first(6) && ok
		case "items":
			// The items have distinct positions below next_seq.
			var ok bool
			items, ok = d.items(s, nextSeq-1)
			return seen.first(7) && ok
		case "response":
			b := &f.Response
			return seen.first(8) && int64Object(s, []string{"start", "end", "outputs_end"}, []*int64{&b.Start, &b.End, &b.OutputsEnd})
		case "context":
			var ok bool
			context, ok = d.items(s, 0)
			return seen.first(9) && ok
		case "context_from":
			return seen.first(10) && optInt(s, &f.ContextFrom)
		case "pending":
			return seen.first(11) && delegate(s, &f.Pending, true)
		case "decisions":
			return seen.first(12) && delegate(s, &f.Decisions, true)
		case "guardrails":
			return seen.first(13) && delegate(s, &f.Guardrails, true)
		case "usage":
			u := &f.Usage
			return seen.first(14) && int64Object(s, []string{"requests", "input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens"},
				[]*int64{&u.Requests, &u.InputTokens, &u.OutputTokens, &u.ReasoningTokens, &u.CachedTokens})
		case "session_id":
			return seen.first(15) && d.optString(s, &f.SessionID)
		case "session_watermark":
			return seen.first(16) && optInt64(s, &f.Watermark)
		case "trace":
			return seen.first(17) && delegate(s, &f.Trace, false)
		case "final_output":
			return seen.first(18) && d.optString(s, &f.Final)
		case "finished":
			if s.null() {
				return seen.first(19)
			}
			v, ok := s.boolean()
			f.Finished = v
			return seen.first(19) && ok
		case "extension":
			return seen.first(20) && delegate(s, &f.Extension, false)
		}
		return false
	})
	if !read || f.ID == nil || f.NextSeq == nil {
		return nil, false, nil
	}
	r, err = newDecodedRun(&f, input, items, context)
	return r, true, err
}

// unmarshalFast is Unmarshal's fast path for a checkpoint of the current
// version. done reports that it read the checkpoint: then the run or the
// error is Unmarshal's answer (the error is one of the checks of a run
// that decoded; see [Run.check]). Otherwise gaveUp reports that it gave
// up on the run object itself, which the encoding/json path then need not
// try on the fast path again. With verification keys it finds the run's
// JSON and checks the signature before decoding it.
func unmarshalFast(data []byte, keys map[string][]byte) (r *Run, done, gaveUp bool, err error) {
	var (
		d       fastDec
		s       = jscan{b: data}
		seen    fieldSet
		runErr  error
		payload []byte
		sig     *wireSignature
	)
	s.skipWS()
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "schema":
			q, flags, ok := s.str()
			return seen.first(0) && ok && flags&strEscaped == 0 && string(q) == SchemaName
		case "version":
			v, ok := s.int64(strconv.IntSize)
			return seen.first(1) && ok && v == SchemaVersion
		case "run":
			if !seen.first(2) || s.peek() != '{' {
				return false
			}
			start := s.i
			ok := true
			if keys == nil {
				r, ok, runErr = d.run(&s)
				gaveUp = !ok
			} else {
				ok = s.value(0)
			}
			payload = data[start:s.i]
			return ok
		case "signature":
			if s.null() {
				return seen.first(3)
			}
			sig = new(wireSignature)
			return seen.first(3) && d.signature(&s, sig)
		}
		return false
	})
	if !ok || !s.end() || seen&7 != 7 {
		return nil, false, gaveUp, nil
	}
	if keys != nil {
		if verify(keys, sig, SchemaName, SchemaVersion, payload) != nil {
			return nil, false, false, nil
		}
		sub := jscan{b: payload}
		if r, ok, runErr = d.run(&sub); !ok || !sub.end() {
			return nil, false, true, nil
		}
	}
	if runErr != nil {
		return nil, true, false, runErr
	}
	return r, true, false, nil
}

// signature reads a {"key_id", "mac"} object.
func (d *fastDec) signature(s *jscan, sig *wireSignature) bool {
	var seen fieldSet
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "key_id":
			return seen.first(0) && d.optString(s, &sig.KeyID)
		case "mac":
			return seen.first(1) && d.optString(s, &sig.MAC)
		}
		return false
	})
}
