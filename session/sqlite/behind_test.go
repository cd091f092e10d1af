package sqlite

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// changesByStamp returns what the session's items of stamp since or more
// are, read by their stamp column alone, as (place, seq) pairs in order,
// and the session's next stamp: what ReadChanges must return, whatever
// index serves it.
func changesByStamp(t *testing.T, s *Store, sid string, since int64) ([][2]int64, int64) {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), `SELECT place, seq FROM session_items WHERE session_id = ? AND stamp >= ? ORDER BY place, seq`, sid, since)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var p [2]int64
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var next int64
	if err := s.db.QueryRowContext(t.Context(), `SELECT max(
			COALESCE((SELECT stamp FROM session_stamps WHERE session_id = ?1), 0),
			COALESCE((SELECT max(stamp) FROM session_items WHERE session_id = ?1), 0)) + 1`, sid).Scan(&next); err != nil {
		t.Fatal(err)
	}
	return out, next
}

// checkChanges fails unless ReadChanges of session sid from stamp 1, from
// each of the last ten stamps and the next returns what changesByStamp
// reads.
func checkChanges(t *testing.T, s *Store, sid, what string) {
	t.Helper()
	_, next := changesByStamp(t, s, sid, 1)
	for since := int64(1); since <= next; since++ {
		if since > 1 && since < next-10 {
			since = next - 10
		}
		want, wantNext := changesByStamp(t, s, sid, since)
		ch, err := s.ReadChanges(t.Context(), sid, session.ChangeQuery{Since: since})
		if err != nil {
			t.Fatalf("%s: ReadChanges(since %d) = %v", what, since, err)
		}
		var got [][2]int64
		for _, p := range ch.Items {
			got = append(got, [2]int64{p.Place, p.Item.Seq()})
		}
		if !slices.Equal(got, want) || ch.Stamp != wantNext {
			t.Fatalf("%s: ReadChanges(since %d) = %v, stamp %d; by the stamps: %v, stamp %d", what, since, got, ch.Stamp, want, wantNext)
		}
	}
}

// TestChangesMatchStamps appends to runs that interleave, fills positions
// late, pops and clears, at random (seeded), and checks after each step
// that ReadChanges from every stamp reads what the items' stamps say:
// the items behind from their index, the others walked back from the
// session's last item.
func TestChangesMatchStamps(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "behind.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(28, 2))
	const sid = "s"
	next := map[string]int64{} // each run's next position
	var holes []struct {
		run string
		seq int64
	}
	for step := range 150 {
		var what string
		switch r := rng.IntN(100); {
		case r < 8:
			it, ok, err := s.Pop(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("step %d: pop (%v, %v)", step, ok, it)
		case r < 10:
			if err := s.Clear(ctx, sid); err != nil {
				t.Fatal(err)
			}
			clear(next)
			holes = holes[:0]
			what = fmt.Sprintf("step %d: clear", step)
		case r < 20 && len(holes) > 0:
			h := holes[0]
			holes = holes[1:]
			if err := s.Append(ctx, sid, h.run, []state.Item{state.UserMessage("late").WithSeq(h.seq)}); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("step %d: %s fills %d", step, h.run, h.seq)
		default:
			run := fmt.Sprintf("run%d", rng.IntN(3))
			if rng.IntN(4) == 0 { // mostly the last run
				run = fmt.Sprintf("run%d", len(next))
			}
			if next[run] == 0 {
				next[run] = 1
			}
			if rng.IntN(8) == 0 { // a position left for later
				holes = append(holes, struct {
					run string
					seq int64
				}{run, next[run]})
				next[run]++
			}
			var items []state.Item
			for range 1 + rng.IntN(3) {
				items = append(items, state.AssistantMessage("m", "x").WithSeq(next[run]))
				next[run]++
			}
			if err := s.Append(ctx, sid, run, items); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("step %d: %s appends %d", step, run, len(items))
		}
		checkChanges(t, s, sid, what)
	}
}

// TestInOrderAppendsStayOutOfTheIndex checks what makes an append cheap:
// a session whose appends each go after its last item (one run after
// another, as a conversation, or one long run) puts nothing in
// session_items_behind, and an item written before the last is put there.
func TestInOrderAppendsStayOutOfTheIndex(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "behind.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	behind := func() (n int) {
		t.Helper()
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM session_items INDEXED BY session_items_behind WHERE session_id = 's' AND behind IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range int64(5) {
		run := fmt.Sprintf("run%d", i)
		for seq := int64(1); seq <= 7; seq += 2 {
			if err := s.Append(ctx, "s", run, []state.Item{state.UserMessage("a").WithSeq(seq), state.AssistantMessage("m", "b").WithSeq(seq + 1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := behind(); n != 0 {
		t.Fatalf("after appends each after the session's last item, %d items behind, want 0", n)
	}
	if err := s.Append(ctx, "s", "run0", []state.Item{state.UserMessage("late").WithSeq(9)}); err != nil {
		t.Fatal(err)
	}
	if n := behind(); n != 1 {
		t.Fatalf("after an append to an earlier run, %d items behind, want 1", n)
	}
	checkChanges(t, s, "s", "after an append to an earlier run")
}

// TestBehindOfABatch checks the behind column of each row of a batch as
// one statement writes it, which reads the session's last item once,
// against what the definition gives row by row: a batch filling
// positions before and after the session's last item, one to an earlier
// run, and one out of order, whose rows, written together with one stamp,
// are not behind each other (as the insert of a larger batch, which
// searches for each row, has them).
func TestBehindOfABatch(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "behind.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	msgs := func(seqs ...int64) []state.Item {
		items := make([]state.Item, len(seqs))
		for i, seq := range seqs {
			items[i] = state.UserMessage(fmt.Sprint("m", seq)).WithSeq(seq)
		}
		return items
	}
	behind := func(run string) map[int64]bool {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT i.seq, i.behind IS NOT NULL FROM session_items i
			JOIN session_runs r ON r.session_id = i.session_id AND r.place = i.place
			WHERE i.session_id = 's' AND r.run_id = ?`, run)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[int64]bool{}
		for rows.Next() {
			var seq int64
			var b bool
			if err := rows.Scan(&seq, &b); err != nil {
				t.Fatal(err)
			}
			got[seq] = b
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	var large []int64 // 20 down to 4
	for seq := int64(len(joinSQL)) + 3; seq >= 4; seq-- {
		large = append(large, seq)
	}
	steps := []struct {
		run  string
		seqs []int64
	}{
		{"a", []int64{1, 2}},
		{"b", []int64{1, 2, 3, 6}},
		{"b", []int64{4, 5, 7}},  // 4 and 5 before the last item, 7 after it
		{"a", []int64{3, 4, 5}},  // an earlier run: all behind
		{"b", []int64{12, 11}},   // out of order, after the last item: neither behind
		{"b", []int64{8, 9, 10}}, // before 11 and 12
		{"c", []int64{1, 2}},
		{"c", large},      // more than one statement takes, out of order
		{"c", []int64{3}}, // before the large batch
	}
	for _, st := range steps {
		if err := s.Append(ctx, "s", st.run, msgs(st.seqs...)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]map[int64]bool{
		"a": {1: false, 2: false, 3: true, 4: true, 5: true},
		"b": {1: false, 2: false, 3: false, 6: false, 4: true, 5: true, 7: false, 12: false, 11: false, 8: true, 9: true, 10: true},
	}
	want["c"] = map[int64]bool{1: false, 2: false, 3: true}
	for _, seq := range large {
		want["c"][seq] = false
	}
	for run, w := range want {
		if got := behind(run); !maps.Equal(got, w) {
			t.Errorf("run %s: behind by position = %v, want %v", run, got, w)
		}
	}
	checkChanges(t, s, "s", "after batches behind")
}
