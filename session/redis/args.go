package redis

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/turnkit/turnkit/state"
)

// appendArgs appends appendLua's ARGV for items of run runID of session
// sessionID to args: the prepared form (see preparedArgs) when the store
// remembers the run's place and items are a common batch, else the
// general form (see generalArgs). Only one of the two is sent: every byte
// of an argument costs the server its hashing into Lua's string table,
// about seven instructions a byte (Redis's Lua hashes every byte of a
// string), so a batch sent in both forms paid for the one it did not
// use. When the server finds the prepared form does not fit (the place
// is no longer the run's, or something of the run is stored at or after
// the batch), it writes nothing and asks for the general form, which the
// store sends next (see [Store.Append]).
func (s *Store) appendArgs(ctx context.Context, args []any, sessionID, runID string, items []state.Item) ([]any, error) {
	if place := s.places.get(sessionID, runID); place != "" && prepared(items) {
		return s.preparedArgs(ctx, args, place, sessionID, runID, items)
	}
	return s.generalArgs(ctx, args, sessionID, runID, items)
}

// generalArgs appends appendLua's ARGV for items in the general form to
// args: the run ID, "" (no prepared form), then the batch, one argument
// of one MessagePack array of strings, which the script reads with
// cmsgpack.unpack: the items' roles, one byte an item ("c" a call, "o"
// an output, "n" another item), then "a" if their Seqs ascend, else "-";
// each item, its Seq in 16 hex digits followed by its encoded form; then
// the ID key of each call and output, in the batch's order (the ID's
// length in 8 hex digits, then the ID). One argument for the batch rather
// than one an item; the array rather than a string of its own format,
// because the script would then make a string of each piece it cuts out
// (string.sub, tonumber), and each string made costs the server about
// what an argument does.
func (s *Store) generalArgs(ctx context.Context, args []any, sessionID, runID string, items []state.Item) ([]any, error) {
	n, count := 1+5+5+len(items)+1, 1+len(items)
	for _, it := range items {
		n += 5 + 16 + s.encodedLen(runID, it)
		if k := it.Kind(); k.IsCall() || k.IsOutput() {
			n += 5 + 8 + len(it.CallID())
			count++
		}
	}
	b := make([]byte, 0, n)
	b = append(b, 0xdd) // array 32
	b = binary.BigEndian.AppendUint32(b, uint32(count))
	b = appendStrHeader(b, len(items)+1)
	ascending := true
	for i, it := range items {
		role := byte('n')
		switch {
		case it.Kind().IsCall():
			role = 'c'
		case it.Kind().IsOutput():
			role = 'o'
		}
		b = append(b, role)
		if i > 0 && it.Seq() <= items[i-1].Seq() {
			ascending = false
		}
	}
	if ascending {
		b = append(b, 'a')
	} else {
		b = append(b, '-')
	}
	for _, it := range items {
		start := len(b)
		b = append(b, 0xdb, 0, 0, 0, 0) // str 32, its length written below
		b = appendHex(b, uint64(it.Seq()), 16)
		var err error
		if b, err = s.appendEncoded(ctx, b, sessionID, runID, it); err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(b[start+1:], uint32(len(b)-start-5))
	}
	for _, it := range items {
		if k := it.Kind(); k.IsCall() || k.IsOutput() {
			id := it.CallID()
			b = appendStrHeader(b, 8+len(id))
			b = appendHex(b, uint64(len(id)), 8)
			b = append(b, id...)
		}
	}
	return append(args, runID, "", b), nil
}

// maxPrepared is the most items a batch sent in the prepared form has.
const maxPrepared = 16

// preparedArgs appends appendLua's ARGV for items, a common batch of run
// runID placed at place, in the prepared form to args: the run ID, the
// place, the bounds of the run's members at or after the batch's first
// position, the numbers of items, calls and outputs; then the items'
// members ("0" and the member, as ZADD takes them), their positions, the
// calls set's new members ("0" and the member) and the outputs hash's new
// fields and values, all as the script's common path would make them,
// each its own argument, so that the script hands them to its writes as
// they come and makes no string but the stamp.
//
// The arguments are slices of one buffer (argSeg), so that they cost no
// allocation an argument.
func (s *Store) preparedArgs(ctx context.Context, args []any, place, sid, runID string, items []state.Item) ([]any, error) {
	calls, outputs, size := 0, 0, len(runID)+4*len(place)+2*16+2
	for _, it := range items {
		size += 2*len(place) + 2*16 + s.encodedLen(runID, it)
		switch k := it.Kind(); {
		case k.IsCall():
			calls++
			size += 2*(len(place)+8+len(it.CallID())+16) + 1 + len(place) + 16 + 1
		case k.IsOutput():
			outputs++
			size += 2*(len(place)+8+len(it.CallID())+16) + 16 + 1 + len(place) + 16 + 1
		}
	}
	w := argsBuilder{
		b:    make([]byte, 0, size),
		segs: make([]argSeg, 0, 4+2*len(items)+3*calls+4*outputs),
		args: slices.Grow(args, preparedLen(items)),
	}
	w.add(runID)
	w.add(place)
	w.b = appendHex(append(append(w.b, '['), place...), uint64(items[0].Seq()), 16)
	w.end(len(w.b) - 1 - len(place) - 16)
	w.b = append(append(append(w.b, '('), place...), 0xff)
	w.end(len(w.b) - 2 - len(place))
	w.args = append(w.args, len(items), calls, outputs)
	for _, it := range items {
		w.args = append(w.args, "0")
		start := len(w.b)
		w.b = appendPos(w.b, place, it.Seq())
		var err error
		if w.b, err = s.appendEncoded(ctx, w.b, sid, runID, it); err != nil {
			return nil, err
		}
		w.end(start)
	}
	for _, it := range items {
		start := len(w.b)
		w.b = appendPos(w.b, place, it.Seq())
		w.end(start)
	}
	for _, it := range items {
		if it.Kind().IsCall() {
			w.args = append(w.args, "0")
			start := len(w.b)
			w.b = appendCallRef(w.b, place, it, it.Seq())
			w.end(start)
		}
	}
	w.outputsFields(place, items)
	return w.args, nil
}

// outputsFields appends the outputs hash's new fields and values of items
// placed at place, each its own argument: "r" and a call's position to
// "c" and its calls member; an answered call (place, ID key, call Seq) to
// its output's Seq, and "r" and the output's position to "a" and that
// field.
func (w *argsBuilder) outputsFields(place string, items []state.Item) {
	for _, it := range items {
		if it.Kind().IsCall() {
			start := len(w.b)
			w.b = appendPos(append(w.b, 'r'), place, it.Seq())
			w.end(start)
			start = len(w.b)
			w.b = appendCallRef(append(w.b, 'c'), place, it, it.Seq())
			w.end(start)
		}
	}
	for o, it := range items {
		if !it.Kind().IsOutput() {
			continue
		}
		call := items[callOf(items, o)].Seq()
		start := len(w.b)
		w.b = appendCallRef(w.b, place, it, call)
		w.end(start)
		start = len(w.b)
		w.b = appendHex(w.b, uint64(it.Seq()), 16)
		w.end(start)
		start = len(w.b)
		w.b = appendPos(append(w.b, 'r'), place, it.Seq())
		w.end(start)
		start = len(w.b)
		w.b = appendCallRef(append(w.b, 'a'), place, it, call)
		w.end(start)
	}
}

// preparedLen returns the number of arguments preparedArgs appends for
// items: four (the run ID, the place, the bounds) and a slice of the
// buffer for each item's member, position, each call's calls member and
// each call's and output's outputs fields, the three numbers, and a "0"
// before each member of a sorted set.
func preparedLen(items []state.Item) int {
	n := 4 + 3 + 3*len(items)
	for _, it := range items {
		if k := it.Kind(); k.IsCall() || k.IsOutput() {
			n += 4
		}
	}
	return n
}

// An argsBuilder writes a script's arguments into one buffer, each a
// slice of it (an argSeg) appended to args.
type argsBuilder struct {
	b    []byte
	segs []argSeg
	args []any
}

// add writes v as the next argument.
func (w *argsBuilder) add(v string) {
	start := len(w.b)
	w.b = append(w.b, v...)
	w.end(start)
}

// slice makes b, which the builder does not copy, the next argument.
func (w *argsBuilder) slice(b []byte) {
	w.segs = append(w.segs, argSeg{b: b})
	w.args = append(w.args, &w.segs[len(w.segs)-1])
}

// end makes the bytes written since start the next argument. Should the
// buffer or the slices grow past their room, the arguments made before
// keep the bytes and slices they were made with: they stay right.
func (w *argsBuilder) end(start int) {
	w.segs = append(w.segs, argSeg{b: w.b[start:len(w.b):len(w.b)]})
	w.args = append(w.args, &w.segs[len(w.segs)-1])
}

// An argSeg is one argument of a script, which go-redis writes as it is
// (an encoding.BinaryMarshaler). A pointer to one fits in an interface
// without an allocation, where a []byte or a string takes one each.
type argSeg struct{ b []byte }

// MarshalBinary returns the argument's bytes.
func (a *argSeg) MarshalBinary() ([]byte, error) { return a.b, nil }

// prepared reports whether items are a common batch (see appendScript)
// that the prepared form can carry: at most maxPrepared items, their Seqs
// ascending, each output after a call with its ID in the batch, the latest
// such call answered by no other output of the batch.
func prepared(items []state.Item) bool {
	if len(items) > maxPrepared {
		return false
	}
	var answered [maxPrepared]bool
	for i, it := range items {
		if i > 0 && it.Seq() <= items[i-1].Seq() {
			return false
		}
		if !it.Kind().IsOutput() {
			continue
		}
		c := callOf(items, i)
		if c < 0 || answered[c] {
			return false
		}
		answered[c] = true
	}
	return true
}

// callOf returns the index of the latest call before items[o] with its
// call ID, or -1.
func callOf(items []state.Item, o int) int {
	id := items[o].CallID()
	for c := o - 1; c >= 0; c-- {
		if items[c].Kind().IsCall() && items[c].CallID() == id {
			return c
		}
	}
	return -1
}

// appendPos appends the position of Seq seq in the run placed at place.
func appendPos(b []byte, place string, seq int64) []byte {
	return appendHex(append(b, place...), uint64(seq), 16)
}

// appendCallRef appends the place, the ID key of it's call ID and the Seq
// seq in 16 hex digits: a member of the calls set (seq, the call's), or
// a field of the outputs hash (seq, the answered call's).
func appendCallRef(b []byte, place string, it state.Item, seq int64) []byte {
	id := it.CallID()
	b = appendHex(append(b, place...), uint64(len(id)), 8)
	return appendHex(append(b, id...), uint64(seq), 16)
}
