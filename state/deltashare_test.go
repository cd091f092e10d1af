package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
)

// TestDeltaSharesContext checks that a delta's snapshot of a run whose
// context changed (a run's first save) shares the context, capped at its
// length, instead of copying it: the run never writes into its context,
// and at 10 000 items of history the copy was 0.9 MB a message.
func TestDeltaSharesContext(t *testing.T) {
	hist := make([]Item, 1_000)
	for i := range hist {
		hist[i] = UserMessage(fmt.Sprint("earlier message ", i)).WithSeq(int64(i + 1))
	}
	r := NewRun("run_share", "assistant")
	r.SetSessionID("s")
	if err := r.setSessionHistory(hist, 7); err != nil {
		t.Fatal(err)
	}
	var s deltaSnapshot
	r.snapshotDelta(&s)
	if !s.ctxChanged || len(s.ctx) != len(hist) {
		t.Fatalf("first snapshot: context changed %v, %d items; want true and %d", s.ctxChanged, len(s.ctx), len(hist))
	}
	if &s.ctx[0] != &hist[0] {
		t.Errorf("the snapshot copied the run's context; want it shared")
	}
	if cap(s.ctx) != len(s.ctx) {
		t.Errorf("the snapshot's context has capacity %d for %d items; want it capped", cap(s.ctx), len(s.ctx))
	}
}

// TestHistoryDigestStreamed checks that the digest streamed through one
// buffer is the SHA-256 of the context's JSON as [Marshal] writes it
// (json.Marshal of its wire items), the form every stored reference was
// digested in: for no items, one, and a history of several chunks with
// items whose JSON is not in canonical form (spaces, <, a non-ASCII
// escape) and tool outputs with names.
func TestHistoryDigestStreamed(t *testing.T) {
	long := make([]Item, 0, 2_000)
	for i := range 1_000 {
		long = append(long,
			UserMessage(fmt.Sprintf("message %d: a < b & c", i)).WithSeq(int64(2*i+1)),
			ToolOutput(fmt.Sprint("call_", i), "lookup", `{"ok":true}`).WithSeq(int64(2*i+2)))
	}
	odd, err := ParseItem(KindUserMessage, []byte(`{ "type": "message", "role": "user", "content": "<b>\u00e9" }`))
	if err != nil {
		t.Fatal(err)
	}
	long = append(long, odd.WithSeq(2_001))
	for _, items := range [][]Item{nil, long[:1], long} {
		data, err := json.Marshal(wireItems(items))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		got, err := historyDigest(items)
		if err != nil {
			t.Fatalf("historyDigest of %d items = %v", len(items), err)
		}
		if want := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("historyDigest of %d items = %s, want %s (of %d bytes of JSON)", len(items), got, want, len(data))
		}
	}
}
