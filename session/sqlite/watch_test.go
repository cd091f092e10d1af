package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/state"
)

// TestWritesUnwatched checks that a write's statements run without the
// driver's watch of the caller's context: with a context that can end,
// modernc's driver starts a goroutine for each statement to interrupt it
// (5 allocations a statement), which a write's statements, each by key,
// do not need (see inTx). Only the transaction's BEGIN and COMMIT, which
// wait for the database's lock and end the write, keep the watch, so a
// save or an append allocates at most watchedAllocs more with a
// cancellable context than with context.Background: 11 and 12 measured
// (2026-12-04; 11 to 14 through database/sql's Tx, which watched the
// context too), against 21 for a save (its head and its pieces watched
// too) and 25 for a save with an append when every statement was.
func TestWritesUnwatched(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	// BEGIN's and COMMIT's watch, 5 each, and the context without
	// cancellation the statements run under; a goroutine started when
	// none is free to reuse allocates too, so the count varies by a few
	// between runs. Below a save's 21 of the earlier code.
	const watchedAllocs = 2*5 + 4
	s := open(t, filepath.Join(t.TempDir(), "watch.db"))
	r := ckpttest.LongRun(t, "watch-run", 10)
	sid := "watch-session"
	if err := s.Save(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	turn := 10
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	allocs := func(ctx context.Context, appendItems bool) float64 {
		return testing.AllocsPerRun(50, func() {
			turn++
			ckpttest.Turn(t, r, turn)
			var items []state.Item
			if appendItems {
				v := r.Items()
				items = []state.Item{v.At(v.Len() - 2), v.At(v.Len() - 1)}
			}
			if err := s.SaveAppend(ctx, r, sid, items); err != nil {
				t.Fatalf("save of turn %d: %v", turn, err)
			}
		})
	}
	for _, appendItems := range []bool{false, true} {
		name := fmt.Sprintf("save, items appended %v", appendItems)
		background, watched := allocs(context.Background(), appendItems), allocs(cancellable, appendItems)
		if watched > background+watchedAllocs {
			t.Errorf("%s: %.1f allocations with a cancellable context, %.1f with context.Background: more than BEGIN's and COMMIT's watch (%d)",
				name, watched, background, watchedAllocs)
		}
		t.Logf("%s: %.1f allocations with a cancellable context, %.1f with context.Background", name, watched, background)
	}
}
