package sqlite

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// storedRows returns the stamp and answers column (0 for NULL) of each
// item of run 1 of session "s", by position.
func storedRows(t *testing.T, s *Store) (stamps, answers map[int64]int64) {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), `SELECT seq, stamp, COALESCE(answers, 0) FROM session_items WHERE session_id = 's' AND place = 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stamps, answers = map[int64]int64{}, map[int64]int64{}
	for rows.Next() {
		var seq, stamp, answer int64
		if err := rows.Scan(&seq, &stamp, &answer); err != nil {
			t.Fatal(err)
		}
		stamps[seq], answers[seq] = stamp, answer
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return stamps, answers
}

// TestAppendPaths appends through each of Append's paths (a new run's
// first append, which the one statement inserts nothing of; a placed
// run's, one statement; a retry with new items after it; a batch larger
// than the prepared statements, in chunks) and checks what each wrote:
// one stamp for the items of one append, above every earlier append's;
// an output's answers column, the position of its call, in the batch or
// stored; a retry's items left as they were.
func TestAppendPaths(t *testing.T) {
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "paths.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(seq int64, id string) state.Item { return state.ToolCall("fc", id, "echo", `{}`).WithSeq(seq) }
	output := func(seq int64, id string) state.Item { return state.ToolOutput(id, "echo", "ok").WithSeq(seq) }
	msg := func(seq int64) state.Item {
		return state.AssistantMessage("m", "hi "+strconv.FormatInt(seq, 10)).WithSeq(seq)
	}
	big := make([]state.Item, 0, 3*len(joinSQL))
	for seq := int64(20); len(big) < cap(big); seq++ {
		big = append(big, msg(seq))
	}
	appends := []struct {
		name    string
		items   []state.Item
		written []int64 // the positions this append writes
	}{
		{"a new run's first", []state.Item{call(1, "a"), output(2, "a"), msg(3)}, []int64{1, 2, 3}},
		{"a placed run's", []state.Item{call(4, "b"), msg(5)}, []int64{4, 5}},
		{"an output of a stored call", []state.Item{output(6, "b"), msg(7)}, []int64{6, 7}},
		{"a retry, then new items", []state.Item{output(6, "b"), msg(7), call(8, "c"), output(9, "c")}, []int64{8, 9}},
		{"larger than the prepared statements", big, nil},
	}
	for _, it := range big {
		appends[len(appends)-1].written = append(appends[len(appends)-1].written, it.Seq())
	}
	last := int64(0)
	before := map[int64]int64{}
	for _, a := range appends {
		if err := s.Append(ctx, "s", "run", a.items); err != nil {
			t.Fatalf("%s append: %v", a.name, err)
		}
		stamps, _ := storedRows(t, s)
		stamp := stamps[a.written[0]]
		if stamp <= last {
			t.Errorf("%s append: stamp %d, want above the last append's %d", a.name, stamp, last)
		}
		for _, seq := range a.written {
			if stamps[seq] != stamp {
				t.Errorf("%s append: item %d has stamp %d, item %d %d: one append, one stamp", a.name, seq, stamps[seq], a.written[0], stamp)
			}
		}
		for seq, was := range before {
			if stamps[seq] != was {
				t.Errorf("%s append: item %d's stamp went %d -> %d", a.name, seq, was, stamps[seq])
			}
		}
		last = stamp
		before = stamps
	}
	_, answers := storedRows(t, s)
	for seq, want := range map[int64]int64{1: 0, 2: 1, 3: 0, 4: 0, 6: 4, 8: 0, 9: 8} {
		if answers[seq] != want {
			t.Errorf("item %d answers %d, want %d", seq, answers[seq], want)
		}
	}
	// A second output of a stored call, through the one statement.
	if err := s.Append(ctx, "s", "run", []state.Item{output(100, "b")}); !errors.Is(err, session.ErrDuplicateOutput) {
		t.Errorf("a second output of call b = %v, want ErrDuplicateOutput", err)
	}
	// A different item at a stored position.
	if err := s.Append(ctx, "s", "run", []state.Item{msg(100), call(3, "z")}); !errors.Is(err, session.ErrConflict) {
		t.Errorf("another item at position 3 = %v, want ErrConflict", err)
	}
}
