package redis

import (
	"context"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// FuzzDecodeMember feeds decodeMember, which reads every item a session
// holds, arbitrary sorted-set members. It needs no server. It must never
// panic; a refusal wraps session.ErrCorrupt; an item it returns is
// encoded as the member it came from (after the place) and decodes again
// equal.
func FuzzDecodeMember(f *testing.F) {
	plain := &Store{}
	encode := func(it state.Item) []byte {
		b, _ := plain.encode(context.Background(), "s", "r", it) // no item codec: cannot fail
		return b
	}
	decodeMember := func(m string) (state.Item, error) { return plain.decodeMember(context.Background(), "s", "", m) }
	for i, it := range []state.Item{
		state.UserMessage("hi"),
		state.ToolCall("fc_1", "call_1", "lookup", `{"q":"x"}`),
		state.ToolOutput("call_1", "lookup", `"found"`),
		state.Reasoning("rs_1", ""),
	} {
		it = it.WithSeq(int64(i + 1))
		f.Add(seqHex(7) + seqHex(it.Seq()) + string(encode(it)))
	}
	f.Add(seqHex(0) + "-000000000000001" + string(encode(state.UserMessage("x"))))
	f.Add(seqHex(0) + seqHex(1) + "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
	f.Fuzz(func(t *testing.T, m string) {
		it, err := decodeMember(m)
		if err != nil {
			if !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("decodeMember error %v does not wrap session.ErrCorrupt", err)
			}
			return
		}
		if got := string(encode(it)); got != m[posLen:] {
			t.Fatalf("item %s encodes as %q, stored as %q", it, got, m[posLen:])
		}
		again, err := decodeMember(m[:posLen] + string(encode(it)))
		if err != nil || !again.Equal(it) {
			t.Fatalf("decoded again as %s, %v; want %s", again, err, it)
		}
	})
}
