package state

import (
	"bytes"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/state/internal/wire"
)

// The decoding fast path: Unmarshal and ParseItem first read their input
// with the hand-written scanner of package wire, which handles the
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
	list    bool   // the item's content or output is a list (see Item.list)
	name    string // the name of the item being parsed
	// shared, when set, is where the items of a run get their bytes and
	// strings, and left bounds the input still to read (see arena). Then
	// the tool and agent names decoded so far are kept, the first few in
	// names and the rest in moreNames, so that the items of one tool share
	// one copy of its name.
	shared    *arena
	left      int
	names     [maxNames]string
	numNames  int
	moreNames map[string]string
	// own and w are the arena and the run object of a run's decoding
	// (run), here in the pooled decoder rather than allocated for each.
	own arena
	w   wireRun
}

// maxNames is how many names a decoder looks up in a list before a map:
// a checkpoint names a few tools and agents.
const maxNames = 8

// setStrings gives the item parsed last its text, call ID and name.
func (d *fastDec) setStrings(it *Item) {
	it.name, it.list = d.name, d.list
	if len(d.text) == 0 {
		return
	}
	var all string
	if d.shared != nil {
		all = d.shared.string(d.text, d.left)
	} else {
		all = string(d.text)
	}
	it.text, it.callID = all[:d.textEnd], all[d.textEnd:]
}

// rawCopy returns a copy of an item's raw JSON, from the shared arena
// when there is one.
func (d *fastDec) rawCopy(raw []byte) []byte {
	if d.shared != nil {
		return d.shared.bytes(raw, d.left)
	}
	return bytes.Clone(raw)
}

// An arena hands out copies of the items' raw JSON and strings carved from
// a few shared chunks, so that the items of a checkpoint cost a few
// allocations rather than two each. Nothing it handed out is written
// again: a chunk that is full is left to the items that refer to it, and
// a strings.Builder shares its bytes with the strings it returns without
// copying them. A chunk is at most left bytes, the length of the input
// still to read, which bounds what the input's items can need; chunks
// double in size, so the arena holds at most about twice what the items
// keep.
type arena struct {
	raw  []byte
	text strings.Builder
	// next is the size of the next chunk; it doubles, from minChunk.
	nextRaw, nextText int
}

// The sizes of an arena's first chunks, if the input is long enough: the
// raw JSON is most of the input, the text a small part of it. A short
// input (a run paused on its first turn is about 1 KiB) gets first chunks
// of a half and a quarter of what is left to read when they are made:
// its fixed members (the usage, the model calls, the pending approvals'
// call IDs) leave its items that much at most, in the checkpoints
// measured (see BenchmarkApproval), so a chunk as long as the rest of the
// input is mostly never written.
const (
	minRawChunk  = 4 << 10
	minTextChunk = 512
	rawShare     = 2 // the first raw chunk is at most left/rawShare
	textShare    = 4 // the first text chunk at most left/textShare
)

// chunk returns the size of a new chunk for need bytes, and the next size,
// which doubles from first.
func chunk(need, next, first, left int) (int, int) {
	next = max(next, first)
	return max(need, min(next, left)), 2 * next
}

// bytes returns a copy of b; left bounds the bytes still to come.
func (a *arena) bytes(b []byte, left int) []byte {
	if cap(a.raw)-len(a.raw) < len(b) {
		var n int
		n, a.nextRaw = chunk(len(b), a.nextRaw, min(minRawChunk, left/rawShare), left)
		a.raw = make([]byte, 0, n)
	}
	i := len(a.raw)
	a.raw = append(a.raw, b...)
	return a.raw[i:len(a.raw):len(a.raw)]
}

// string returns b as a string; left bounds the bytes still to come.
func (a *arena) string(b []byte, left int) string {
	if a.text.Cap()-a.text.Len() < len(b) {
		var n int
		n, a.nextText = chunk(len(b), a.nextText, min(minTextChunk, left/textShare), left)
		a.text = strings.Builder{}
		a.text.Grow(n)
	}
	i := a.text.Len()
	a.text.Write(b)
	return a.text.String()[i:]
}

// intern returns q unescaped, shared with the names decoded before it
// when the decoder shares (see fastDec.shared).
func (d *fastDec) intern(q wire.Quoted) string {
	if len(q.Q) == 0 {
		return ""
	}
	d.scratch = q.AppendTo(d.scratch[:0])
	if d.shared == nil {
		return string(d.scratch)
	}
	for _, v := range d.names[:d.numNames] {
		if v == string(d.scratch) {
			return v
		}
	}
	if v, ok := d.moreNames[string(d.scratch)]; ok {
		return v
	}
	v := d.shared.string(d.scratch, d.left)
	if d.numNames < maxNames {
		d.names[d.numNames] = v
		d.numNames++
		return v
	}
	if d.moreNames == nil {
		d.moreNames = make(map[string]string)
	}
	d.moreNames[v] = v
	return v
}

// keep returns q unescaped, from the shared arena when there is one;
// left bounds the bytes still to read.
func (d *fastDec) keep(q wire.Quoted, left int) string {
	text := q.Q // as it is when it has nothing to unescape
	if q.Flags&(jsonscan.StrEscaped|jsonscan.StrNonASCII) != 0 {
		d.scratch = q.AppendTo(d.scratch[:0])
		text = d.scratch
	}
	if d.shared == nil {
		return string(text)
	}
	return d.shared.string(text, left)
}

// optKept scans a string or null (which leaves *dst as it is) into *dst,
// as [fastDec.keep] keeps it.
func (d *fastDec) optKept(s *jsonscan.Scanner, dst *string) bool {
	var q wire.Quoted
	if !wire.OptQuoted(s, &q, true) {
		return false
	}
	if q.Q != nil {
		*dst = d.keep(q, len(s.B)-s.I)
	}
	return true
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

// Members ParseItem skips as it skips any other, named so that an item
// with them in its kind's usual order walks its members without a miss
// (see itemLayout): the APIs' items have them.
const (
	fieldID = numItemFields + iota
	fieldStatus
	numItemKeys
)

var itemFieldNames = [numItemFields]string{"type", "role", "call_id", "name", "arguments", "output", "content", "summary"}

var itemKeyNames = [numItemKeys]string{
	fieldType: "type", fieldRole: "role", fieldCallID: "call_id", fieldName: "name", fieldArguments: "arguments",
	fieldOutput: "output", fieldContent: "content", fieldSummary: "summary", fieldID: "id", fieldStatus: "status",
}

// An itemLayout is the keys of an item's members for [jsonscan.Object],
// in the order an item of some kinds has them (the APIs' and this
// package's writers put a function call's as type, id, call_id, name,
// arguments, status; a user message's as type, role, content), and the
// field of each key. A member out of the keys' order costs its key's
// scan and lookup, several times a member in order (callgrind: the
// members of a paused run's call item and user message, 2 565
// instructions in one order for every kind, 987 in these).
type itemLayout struct {
	keys   [numItemKeys]jsonscan.Key
	fields [numItemKeys]int8
}

// itemLayouts are the layouts of the kinds of item ParseItem reads,
// each the members in its kind's order first, then the rest.
var itemLayouts = func() (ls [KindHandoffOutput + 1]itemLayout) {
	orders := map[Kind][]int8{
		KindUserMessage:      {fieldType, fieldRole, fieldContent},
		KindSystemMessage:    {fieldType, fieldRole, fieldContent},
		KindAssistantMessage: {fieldType, fieldID, fieldRole, fieldStatus, fieldContent},
		KindReasoning:        {fieldType, fieldID, fieldSummary},
		KindToolCall:         {fieldType, fieldID, fieldCallID, fieldName, fieldArguments, fieldStatus},
		KindHandoffCall:      {fieldType, fieldID, fieldCallID, fieldName, fieldArguments, fieldStatus},
		KindToolOutput:       {fieldType, fieldCallID, fieldOutput},
		KindHandoffOutput:    {fieldType, fieldCallID, fieldOutput},
	}
	for k := range ls {
		order := orders[Kind(k)]
		for f := range int8(numItemKeys) {
			if !slices.Contains(order, f) {
				order = append(order, f)
			}
		}
		for i, f := range order {
			ls[k].keys[i], ls[k].fields[i] = jsonscan.MakeKey(itemKeyNames[f]), f
		}
	}
	return ls
}()

// optString scans a string or null into *dst (a null leaves it as is).
func (d *fastDec) optString(s *jsonscan.Scanner, dst *string) bool {
	return s.Null() || d.string(s, dst)
}

// optName scans a name, a string or null (which leaves *dst as it is),
// into *dst, interned (see [fastDec.intern]).
func (d *fastDec) optName(s *jsonscan.Scanner, dst *string) bool {
	var q wire.Quoted
	if !wire.OptQuoted(s, &q, true) {
		return false
	}
	if q.Q != nil {
		*dst = d.intern(q)
	}
	return true
}

// string scans a string into *dst.
func (d *fastDec) string(s *jsonscan.Scanner, dst *string) bool {
	v, ok := s.String(&d.scratch)
	*dst = v
	return ok
}

// item parses an item's JSON at s as ParseItem does, leaving its strings
// in d.text for setStrings and its raw bytes to the caller.
func (d *fastDec) item(s *jsonscan.Scanner, kind Kind) (Item, bool) {
	if kind.isTyped() {
		return Item{}, false // parseTyped reads these
	}
	var (
		seen   wire.FieldSet
		m      itemStrings
		call   = kind.IsCall()
		output = kind.IsOutput()
	)
	d.text, d.list = d.text[:0], false
	lay := &itemLayouts[kind]
	o := s.Object(lay.keys[:])
	for o.Next(s) {
		f := -1
		if o.Field >= 0 {
			f = int(lay.fields[o.Field])
		}
		switch {
		case f >= numItemFields: // skipped, as often as it comes
		case f >= 0 && !seen.First(f), f < 0 && folds(o.Key, itemFieldNames[:]):
			return Item{}, false // repeated, or a member encoding/json matches by case folding
		}
		if !d.itemMember(s, f, kind, &m) {
			return Item{}, false
		}
	}
	if !o.Done() {
		return Item{}, false
	}
	typ, callID, name, args := m.typ, m.callID, m.name, m.args
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
		if string(typ) != "function_call" || len(callID.Q) == 0 || len(name.Q) == 0 {
			return Item{}, false
		}
	case output:
		if string(typ) != "function_call_output" || len(callID.Q) == 0 {
			return Item{}, false
		}
	}
	if call {
		d.text = args.AppendTo(d.text) // the only text of a call
	}
	d.textEnd = len(d.text)
	if call || output {
		d.text = callID.AppendTo(d.text)
	}
	d.name = ""
	if call {
		d.name = d.intern(name)
	}
	return Item{kind: kind}, true
}

// itemStrings are the members of an item that item checks and keeps, as
// the input has them.
type itemStrings struct {
	typ                []byte
	callID, name, args wire.Quoted
}

// folds reports whether encoding/json would match key, which is none of
// names exactly, to one of them by case folding.
func folds(key []byte, names []string) bool {
	for _, n := range names {
		if jsonscan.FoldEq(key, n) {
			return true
		}
	}
	return false
}

// itemMember reads the value at s of the item member at position f of
// itemKeyNames (-1 for another), keeping what item needs in m.
func (d *fastDec) itemMember(s *jsonscan.Scanner, f int, kind Kind, m *itemStrings) bool {
	call, output := kind.IsCall(), kind.IsOutput()
	switch f {
	case fieldType:
		if s.Null() {
			return true
		}
		q, flags, ok := s.Str()
		m.typ = q
		return ok && flags&jsonscan.StrEscaped == 0
	case fieldCallID:
		return wire.OptQuoted(s, &m.callID, call || output)
	case fieldName:
		return wire.OptQuoted(s, &m.name, call)
	case fieldArguments:
		return wire.OptQuoted(s, &m.args, call)
	case fieldRole:
		return wire.OptQuoted(s, nil, false)
	case fieldOutput, fieldContent:
		if (f == fieldOutput) == output && (output || kind.isMessage()) {
			d.list = s.Peek() == '[' && (output || kind == KindUserMessage)
			return d.content(s)
		}
	case fieldSummary:
		return d.summary(s, kind == KindReasoning)
	}
	return s.Value(1)
}

func (k Kind) isMessage() bool {
	return k == KindUserMessage || k == KindSystemMessage || k == KindAssistantMessage
}

// content reads a message content or output value as contentText does,
// appending its text to d.text.
func (d *fastDec) content(s *jsonscan.Scanner) bool {
	switch s.Peek() {
	case 'n':
		return s.Null()
	case '"':
		q, flags, ok := s.Str()
		d.text = jsonscan.AppendUnquoted(d.text, q, flags)
		return ok
	}
	for l := s.Array(); ; {
		if !l.Next(s) {
			return l.Done()
		}
		part, ok := pair(s, "text", "refusal")
		d.text = part[1].AppendTo(part[0].AppendTo(d.text))
		if !ok {
			return false
		}
	}
}

// summary reads a reasoning summary, appending its texts, one a line, to
// d.text when keep is set.
func (d *fastDec) summary(s *jsonscan.Scanner, keep bool) bool {
	if s.Null() {
		return true
	}
	l := s.Array()
	for first := true; l.Next(s); first = false {
		if keep && !first {
			d.text = append(d.text, '\n')
		}
		part, ok := pair(s, "type", "text")
		if keep {
			d.text = part[1].AppendTo(d.text)
		}
		if !ok {
			return false
		}
	}
	return l.Done()
}

// pair reads a null or an object whose fields a and b, if present, are
// strings or null, as encoding/json decodes it into a struct of the two.
func pair(s *jsonscan.Scanner, a, b string) ([2]wire.Quoted, bool) {
	var (
		v    [2]wire.Quoted
		seen wire.FieldSet
	)
	if s.Null() {
		return v, true
	}
	names := [2]string{a, b}
	o := s.Object(nil)
	for o.Next(s) {
		f, ok := seen.Field(o.Key, names[:])
		switch {
		case !ok:
			return v, false
		case f < 0:
			ok = s.Value(3)
		default:
			ok = wire.OptQuoted(s, &v[f], true)
		}
		if !ok {
			return v, false
		}
	}
	return v, o.Done()
}

// parseItemFast is ParseItem's fast path: the item, with a copy of raw, or
// false.
func parseItemFast(kind Kind, raw []byte) (Item, bool) {
	d := itemDecs.Get().(*fastDec)
	defer d.release()
	s := jsonscan.Scanner{B: raw}
	s.SkipWS()
	it, ok := d.item(&s, kind)
	if !ok || !s.End() {
		return Item{}, false
	}
	d.setStrings(&it)
	it.raw = bytes.Clone(raw)
	it.canon = !s.WS && s.Flags&jsonscan.StrHTML == 0
	return it, true
}

// itemDecs keeps the decoders of ParseItem and Unmarshal between calls.
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
// bounds the number of items the list should hold, or is 0; a list so
// bounded is made with resumeItemsRoom more.
//
// prefix, when set, is a list decoded before whose items this one may
// begin with, as a run's items begin with its input: each leading item
// whose wire form is the same as the prefix's item there is that item,
// not parsed again, and the list shares the prefix's array (which the
// caller then caps at its length). At the first item that differs the
// list moves to an array of its own, leaving the prefix as it was.
func (d *fastDec) items(s *jsonscan.Scanner, atMost int64, prefix []Item) ([]Item, bool) {
	if s.Null() {
		return nil, true
	}
	var out []Item
	sharing := len(prefix) > 0
	if n := int64(len(s.B)-s.I) / minWireItemLen; sharing {
		out = prefix[:0]
	} else if atMost > 0 {
		out = make([]Item, 0, min(n, atMost)+resumeItemsRoom)
	}
	l := s.Array()
	for l.Next(s) {
		var like *Item
		if sharing && len(out) < len(prefix) {
			like = &prefix[len(out)]
		}
		it, same, ok := d.wireItem(s, like)
		if !ok {
			return nil, false
		}
		if like != nil && !same {
			// The prefix's items from here on stay its own.
			out = append(make([]Item, 0, cap(prefix)), out...)
			sharing = false
		}
		out = append(out, it)
	}
	if !l.Done() || len(out) == 0 {
		return nil, l.Done()
	}
	return out, true
}

// readsItem reports whether the fast path reads raw, one wire item, whole.
func (d *fastDec) readsItem(raw []byte) bool {
	s := jsonscan.Scanner{B: raw}
	s.SkipWS()
	_, _, ok := d.wireItem(&s, nil)
	return ok && s.End()
}

// itemList reads a list of wire items into *dst as [fastDec.items] does.
func (d *fastDec) itemList(s *jsonscan.Scanner, dst *[]Item, atMost int64, prefix []Item) bool {
	list, ok := d.items(s, atMost, prefix)
	*dst = list
	return ok
}

// A decoded run's items and model calls get room for what its resume
// records first: the next model response (a call, or a reasoning item
// and a message) and its model call. Without it, resuming a paused run
// grew both lists at once, each a new array and a copy (2 of the 52
// allocations of the approval cycle; see BenchmarkApproval), while the
// room costs a finished run 2 items' and a model call's bytes.
const (
	resumeItemsRoom = 2
	resumeCallsRoom = 1
)

// minWireItemLen is less than the length of the shortest valid wire item,
// such as {"seq":1,"kind":"reasoning","raw":{"type":"reasoning"}}.
const minWireItemLen = 32

// wireItem reads one wire item object (see [wireItem]). When like is set
// and the object is the same as like's wire form (position, kind and
// raw JSON, without an output's name), it returns like itself, unparsed,
// and same.
func (d *fastDec) wireItem(s *jsonscan.Scanner, like *Item) (_ Item, same, _ bool) {
	var (
		seen       wire.FieldSet
		seq        int64
		kind       Kind
		name       wire.Quoted
		it         Item
		raw        []byte // the raw value as it is in the input
		parsed     bool   // it was parsed from raw
		whitespace bool   // raw has whitespace to compact
		html       bool   // raw has characters that encoding/json escapes
	)
	o := itemFields.Object(s)
	for o.Next(s) {
		f := o.Field
		if f < 0 || !seen.First(f) {
			return Item{}, false, false
		}
		var ok bool
		switch f {
		case itemSeq:
			ok = wire.OptInt64(s, &seq)
		case itemKind:
			q, flags, read := s.Str()
			kind = kindByName(q)
			ok = read && flags&jsonscan.StrEscaped == 0 && kind != 0
		case itemName:
			ok = wire.OptQuoted(s, &name, true)
		case itemRaw:
			start, ws, flags := s.I, s.WS, s.Flags
			s.WS, s.Flags = false, 0
			switch {
			case like == nil && kind != 0 && !kind.isTyped():
				it, ok = d.item(s, kind)
				parsed = true
			case skipRepeated(s, like):
				ok = true
			default:
				ok = s.Peek() == '{' && s.Value(0)
			}
			raw, whitespace, html = s.B[start:s.I], s.WS, s.Flags&jsonscan.StrHTML != 0
			s.WS, s.Flags = s.WS || ws, s.Flags|flags
		}
		if !ok {
			return Item{}, false, false
		}
	}
	if !o.Done() || kind == 0 || raw == nil || len(name.Q) > 0 && !kind.IsOutput() {
		return Item{}, false, false
	}
	if like != nil && seq == like.seq && kind == like.kind && len(name.Q) == 0 && like.name == "" &&
		!whitespace && bytes.Equal(raw, like.raw) {
		return *like, true, true // like's raw is compact: it read as this one would
	}
	if kind.isTyped() {
		it, ok := d.typedItem(kind, raw, whitespace, name, seq)
		return it, false, ok
	}
	if !parsed {
		var ok bool
		sub := jsonscan.Scanner{B: raw}
		if it, ok = d.item(&sub, kind); !ok {
			return Item{}, false, false
		}
	}
	d.left = len(s.B) - s.I + len(raw) // at most the raw's and what follows it
	if whitespace {
		it.raw = compact(raw)
	} else {
		it.raw, it.canon = d.rawCopy(raw), !html
	}
	if len(name.Q) > 0 {
		d.name = d.intern(name)
	}
	d.setStrings(&it)
	it.seq = seq
	return it, false, true
}

// skipRepeated skips the raw JSON at s when it begins with like's, the
// input's item again, as Marshal writes every item of the input: like's
// JSON was read and checked with the input, and a whole value that the
// rest begins with is all of the value there. The scan's flags say
// that the JSON has characters encoding/json escapes unless like knows
// it has none.
func skipRepeated(s *jsonscan.Scanner, like *Item) bool {
	if like == nil || len(like.raw) == 0 || !bytes.HasPrefix(s.B[s.I:], like.raw) {
		return false
	}
	s.I += len(like.raw)
	if !like.canon {
		s.Flags |= jsonscan.StrHTML // as the scan may have found
	}
	return true
}

// typedItem builds a wire item of a kind that parseTyped reads, as
// decodeItems does: from its compacted raw JSON, named name when it is an
// output.
func (d *fastDec) typedItem(kind Kind, raw []byte, whitespace bool, name wire.Quoted, seq int64) (Item, bool) {
	if whitespace {
		raw = compact(raw)
	}
	it, err := parseTyped(kind, raw)
	if err != nil {
		return Item{}, false
	}
	if len(name.Q) > 0 {
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

// ints reads a null or an object of integer fields (a [Boundary], a
// [Usage]) into its members m, the fields fs lists.
func ints(s *jsonscan.Scanner, m []*int64, fs *wire.Fields) bool {
	if s.Null() {
		return true
	}
	var seen wire.FieldSet
	o := fs.Object(s)
	for o.Next(s) {
		if f := o.Field; f < 0 || !seen.First(f) || !wire.OptInt64(s, m[f]) {
			return false
		}
	}
	return o.Done()
}

// approvalFields are the members of a pending approval.
var approvalFields = wire.FieldsOf(reflect.TypeFor[Approval]())

// approvals reads a null or a list of pending approvals into *p as
// encoding/json decodes it (an empty list leaves *p nil, as Delegate
// does): each member is a string or an integer, so no value decodes
// itself, but for an elicitation, which encoding/json decodes. Anything
// else (an element that is not an object, an unknown or repeated member)
// gives up.
func (d *fastDec) approvals(s *jsonscan.Scanner, p *[]Approval) bool {
	if s.Null() {
		return true
	}
	var out []Approval
	l := s.Array()
	for l.Next(s) {
		out = append(out, Approval{})
		if !d.approval(s, &out[len(out)-1]) { // decoded in place
			return false
		}
	}
	*p = out
	return l.Done()
}

// The members of an [Approval], for a switch on a member's position
// without comparing Go names: approvalMembers[f] is the member at
// position f of approvalFields (-1 for one added to Approval and not
// here, which checkAllMembers reports).
const (
	approvalTool = iota
	approvalCallID
	approvalArguments
	approvalAgent
	approvalSeq
	approvalOutputSeq
	approvalOwner
	approvalElicitation
)

var approvalMembers = memberIDs(approvalFields, []string{
	approvalTool: "Tool", approvalCallID: "CallID", approvalArguments: "Arguments", approvalAgent: "Agent",
	approvalSeq: "Seq", approvalOutputSeq: "OutputSeq", approvalOwner: "Owner", approvalElicitation: "Elicitation",
})

// memberIDs returns, for each member of fs in List's order, the position
// of its Go name in goNames, or -1.
func memberIDs(fs *wire.Fields, goNames []string) []int {
	ids := make([]int, len(fs.List))
	for i, f := range fs.List {
		ids[i] = slices.Index(goNames, f.GoName)
	}
	return ids
}

// approval reads a pending approval's object into *a.
func (d *fastDec) approval(s *jsonscan.Scanner, a *Approval) bool {
	var seen wire.FieldSet
	o := approvalFields.Object(s)
	for o.Next(s) {
		f := o.Field
		if f < 0 || !seen.First(f) {
			return false
		}
		var ok bool
		switch approvalMembers[f] {
		case approvalTool:
			ok = d.optName(s, &a.Tool) // the call item's name, interned
		case approvalCallID: // kept in the shared chunks, as the items' strings
			ok = d.optKept(s, &a.CallID)
		case approvalArguments:
			ok = d.optKept(s, &a.Arguments)
		case approvalAgent:
			ok = d.optName(s, &a.Agent) // the run's agent, interned
		case approvalSeq:
			ok = wire.OptInt64(s, &a.Seq)
		case approvalOutputSeq:
			ok = wire.OptInt64(s, &a.OutputSeq)
		case approvalOwner:
			ok = d.optString(s, &a.Owner)
		case approvalElicitation:
			ok = wire.Delegate(s, &a.Elicitation, false) // a is in the approvals' array, on the heap already
		}
		if !ok {
			return false
		}
	}
	return o.Done()
}

// run reads a run object as decodeRunPayload does, including its checks,
// member by member as [runFields] lists them, by their Go types.
// read reports that it read the object; then the run or the error of its
// checks (see [Run.check]) is the one decodeRunPayload returns.
func (d *fastDec) run(s *jsonscan.Scanner) (r *Run, read bool, err error) {
	var (
		w     = &d.w
		seen  wire.FieldSet
		lists decodedLists
	)
	*w = wireRun{}
	members := runMembers(w)
	d.own, d.numNames, d.moreNames = arena{}, 0, nil
	d.shared, d.left = &d.own, len(s.B)-s.I
	o := runFields.Object(s)
	for o.Next(s) {
		f := o.Field
		if f < 0 || !seen.First(f) {
			return nil, false, nil
		}
		if runFields.Required.Has(f) && s.Peek() == 'n' {
			return nil, false, nil // missing: the encoding/json path says so
		}
		if !d.runMember(s, members[f], &lists) {
			return nil, false, nil
		}
	}
	if !o.Done() || seen&runFields.Required != runFields.Required {
		return nil, false, nil
	}
	r, err = newDecodedRun(w, slices.Clip(lists.input), lists.items, lists.context)
	return r, true, err
}

// decodedLists are the item lists of a run being decoded.
type decodedLists struct{ input, items, context []Item }

// runMember reads the value at s of the member of d.w that p points to
// (see runMembers), its item lists into lists.
func (d *fastDec) runMember(s *jsonscan.Scanner, p any, lists *decodedLists) bool {
	w := &d.w
	switch p := p.(type) {
	case *string:
		if p == &w.Agent { // interned: its model calls name it again
			return d.optName(s, p)
		}
		return d.optKept(s, p) // the ID, the session, the final output: in the shared chunks
	case *int:
		return wire.OptInt(s, p)
	case *int64:
		return wire.OptInt64(s, p)
	case *bool:
		if s.Null() {
			return true
		}
		b, ok := s.Boolean()
		*p = b
		return ok
	case *[]wireItem:
		switch p {
		case &w.Input: // with room for the items, which may share its list
			return d.itemList(s, &lists.input, w.NextSeq-1, nil)
		case &w.Items: // distinct positions below next_seq, beginning with the input
			return d.itemList(s, &lists.items, w.NextSeq-1, lists.input)
		}
		return d.itemList(s, &lists.context, 0, nil)
	case *[]Approval:
		return d.approvals(s, p)
	case *[]ModelCall:
		return d.modelCalls(s, p)
	case *Boundary:
		m := p.members()
		return ints(s, m[:], boundaryFields)
	case *Usage:
		m := p.members()
		return ints(s, m[:], usageFields)
	case *[]Decision, *[]GuardrailResult:
		return wire.Delegate(s, p, true)
	}
	return wire.Delegate(s, p, false)
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
		d       = itemDecs.Get().(*fastDec)
		s       = jsonscan.Scanner{B: data}
		seen    wire.FieldSet
		runErr  error
		payload []byte
		sig     *wireSignature
	)
	defer d.release()
	s.SkipWS()
	o := envFields.Object(&s)
	for o.Next(&s) {
		f := o.Field
		if f < 0 || !seen.First(f) {
			return nil, false, gaveUp, nil
		}
		var ok bool
		switch f {
		case envSchema:
			q, flags, read := s.Str()
			ok = read && flags&jsonscan.StrEscaped == 0 && string(q) == SchemaName
		case envVersion:
			v, read := s.Int64(strconv.IntSize)
			ok = read && v == SchemaVersion
		case envRun:
			if s.Peek() != '{' {
				break
			}
			start := s.I
			if keys == nil {
				r, ok, runErr = d.run(&s)
				gaveUp = !ok
			} else {
				ok = s.Value(0)
			}
			payload = data[start:s.I]
		case envSignature:
			ok = s.Null()
			if !ok {
				sig = new(wireSignature)
				ok = d.signature(&s, sig)
			}
		}
		if !ok {
			return nil, false, gaveUp, nil
		}
	}
	if !o.Done() || !s.End() || !seen.Has(envSchema) || !seen.Has(envVersion) || !seen.Has(envRun) {
		return nil, false, gaveUp, nil
	}
	if keys != nil {
		if verify(keys, sig, SchemaName, SchemaVersion, payload) != nil {
			return nil, false, false, nil
		}
		var ok bool
		sub := jsonscan.Scanner{B: payload}
		if r, ok, runErr = d.run(&sub); !ok || !sub.End() {
			return nil, false, true, nil
		}
	}
	if runErr != nil {
		return nil, true, false, runErr
	}
	return r, true, false, nil
}

// signature reads a signature object (see [wireSignature]).
func (d *fastDec) signature(s *jsonscan.Scanner, sig *wireSignature) bool {
	var seen wire.FieldSet
	v := reflect.ValueOf(sig).Elem()
	o := sigFields.Object(s)
	for o.Next(s) {
		f := o.Field
		if f < 0 || !seen.First(f) || !d.optString(s, v.Field(sigFields.List[f].Index).Addr().Interface().(*string)) {
			return false
		}
	}
	return o.Done()
}
