package state_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// digestItems returns n user messages at positions from+1 on.
func digestItems(from, n int) []state.Item {
	out := make([]state.Item, n)
	for i := range out {
		out[i] = state.UserMessage(fmt.Sprintf("message %d", from+i)).WithSeq(int64(from + i + 1))
	}
	return out
}

// TestHistoryDigestContinues: a digest over an array grown in place (as
// the session cache grows the history it handed out) continues from the
// memo's hash of its first part, and is the digest of the whole list
// computed from nothing (over a copy, which the memo does not know).
func TestHistoryDigestContinues(t *testing.T) {
	hist := make([]state.Item, 0, 64)
	hist = append(hist, digestItems(0, 10)...)
	for _, grow := range []int{0, 2, 3, 30} {
		hist = append(hist, digestItems(len(hist), grow)...)
		got, err := state.HistoryDigest(hist)
		if err != nil {
			t.Fatal(err)
		}
		if n := state.DigestMemoCovers(hist); n != len(hist) {
			t.Errorf("after a digest of %d items the memo covers %d", len(hist), n)
		}
		want, err := state.HistoryDigest(slices.Clone(hist))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%d items (grown by %d in place): digest %s, from nothing %s", len(hist), grow, got, want)
		}
	}
}

// TestHistoryDigestLastItemReplaced: when the last item the memo covers
// is no longer the one hashed (an array rewritten in place, which the
// session cache never does), the digest starts from nothing.
func TestHistoryDigestLastItemReplaced(t *testing.T) {
	hist := digestItems(0, 8)
	if _, err := state.HistoryDigest(hist); err != nil {
		t.Fatal(err)
	}
	hist[7] = state.UserMessage("another message").WithSeq(99)
	got, err := state.HistoryDigest(hist)
	if err != nil {
		t.Fatal(err)
	}
	want, err := state.HistoryDigest(slices.Clone(hist))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("digest after the last item was replaced %s, from nothing %s", got, want)
	}
}

// TestHistoryDigestConcurrent: digests of the same array at once (the
// memo's hash is taken by one of them) all agree; run with -race.
func TestHistoryDigestConcurrent(t *testing.T) {
	hist := make([]state.Item, 0, 256)
	hist = append(hist, digestItems(0, 100)...)
	want, err := state.HistoryDigest(slices.Clone(hist))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got, err := state.HistoryDigest(hist); err != nil || got != want {
					t.Errorf("digest %s, %v; want %s", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHistoryDigestMemoBounded: digests over more live arrays than the
// memo holds keep it within its bound, and each digest stays right.
func TestHistoryDigestMemoBounded(t *testing.T) {
	arrays := make([][]state.Item, state.MaxDigests+100)
	for i := range arrays {
		arrays[i] = digestItems(i, 2)
		got, err := state.HistoryDigest(arrays[i])
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := state.HistoryDigest(slices.Clone(arrays[i])); got != want {
			t.Fatalf("array %d: digest %s, from nothing %s", i, got, want)
		}
		if n := state.DigestMemoLen(); n > state.MaxDigests {
			t.Fatalf("after %d arrays the memo holds %d entries, bound %d", i+1, n, state.MaxDigests)
		}
	}
}
