package sessiontest

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// testListSessions checks a store's [session.Lister]: sessions newest
// first by their first append, paged; a search by prefix in ID order,
// paged; a cleared session gone; a bad cursor.
func testListSessions(t *testing.T, s session.Store) {
	l, ok := s.(session.Lister)
	if !ok {
		t.Skipf("%T does not implement session.Lister", s)
	}
	base := newSessionID(t)
	ids := []string{base + "/b", base + "/a", base + "/c", base + "/a2"}
	for _, id := range ids {
		if err := s.Append(ctx(t), id, "run", []state.Item{item("run", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	// A second run in a session does not move it.
	if err := s.Append(ctx(t), ids[0], "run2", []state.Item{item("run2", 1)}); err != nil {
		t.Fatal(err)
	}
	all := func(q session.SessionQuery, limit int) []string {
		t.Helper()
		q.Limit = limit
		var out []string
		for {
			page, err := l.ListSessions(ctx(t), q)
			if err != nil {
				t.Fatalf("ListSessions(%+v) = %v", q, err)
			}
			if len(page.IDs) > limit {
				t.Fatalf("ListSessions(%+v): %d on a page of %d", q, len(page.IDs), limit)
			}
			out = append(out, page.IDs...)
			if page.Next == "" {
				return out
			}
			q.Cursor = page.Next
		}
	}
	mine := func(got []string) []string {
		return slices.DeleteFunc(got, func(id string) bool { return !slices.Contains(ids, id) })
	}
	for _, limit := range []int{1, 3, 50} {
		if d := cmp.Diff([]string{ids[3], ids[2], ids[1], ids[0]}, mine(all(session.SessionQuery{}, limit))); d != "" {
			t.Errorf("newest first, pages of %d (-want +got):\n%s", limit, d)
		}
		if d := cmp.Diff([]string{ids[1], ids[3]}, all(session.SessionQuery{Prefix: base + "/a"}, limit)); d != "" {
			t.Errorf("prefix %q, pages of %d (-want +got):\n%s", base+"/a", limit, d)
		}
		if d := cmp.Diff([]string{ids[1], ids[3], ids[0], ids[2]}, all(session.SessionQuery{Prefix: base}, limit)); d != "" {
			t.Errorf("prefix %q, pages of %d (-want +got):\n%s", base, limit, d)
		}
	}
	if err := s.Clear(ctx(t), ids[2]); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{ids[3], ids[1], ids[0]}, mine(all(session.SessionQuery{}, 2))); d != "" {
		t.Errorf("after a clear (-want +got):\n%s", d)
	}
	for _, q := range []session.SessionQuery{{Cursor: "x"}, {Cursor: "n"}, {Cursor: "i" + base}, {Prefix: base + "/a", Cursor: "i" + base + "/b"}} {
		if _, err := l.ListSessions(ctx(t), q); !errors.Is(err, session.ErrCursor) {
			t.Errorf("ListSessions(%+v) = %v, want ErrCursor", q, err)
		}
	}
}

// testListPage checks a store's [session.Pager]: a session's items read
// backwards a page at a time come out as List has them, with their runs
// and places; a bad cursor.
func testListPage(t *testing.T, s session.Store) {
	p, ok := s.(session.Pager)
	if !ok {
		t.Skipf("%T does not implement session.Pager", s)
	}
	sid := newSessionID(t)
	runs := []string{"first", "second", "third"}
	for _, r := range runs {
		items := make([]state.Item, 7)
		for i := range items {
			items[i] = item(r, int64(i+1))
		}
		if err := s.Append(ctx(t), sid, r, items); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.List(ctx(t), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 4, 7, 50} {
		var got []state.Item
		q := session.PageQuery{Limit: limit}
		for {
			page, err := p.ListPage(ctx(t), sid, q)
			if err != nil {
				t.Fatalf("ListPage(%+v) = %v", q, err)
			}
			if len(page.Entries) > limit || len(page.Entries) == 0 {
				t.Fatalf("ListPage(%+v): %d items on a page of %d", q, len(page.Entries), limit)
			}
			var items []state.Item
			for _, e := range page.Entries {
				if wantRun := runs[e.Place-1]; e.RunID != wantRun {
					t.Fatalf("ListPage: %s of place %d in run %q, want %q", e.Item, e.Place, e.RunID, wantRun)
				}
				items = append(items, e.Item)
			}
			got = append(items, got...)
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		if d := cmp.Diff(views(want), views(got)); d != "" {
			t.Errorf("pages of %d (-List +pages):\n%s", limit, d)
		}
	}
	if page, err := p.ListPage(ctx(t), newSessionID(t), session.PageQuery{}); err != nil || len(page.Entries) != 0 || page.Next != "" {
		t.Errorf("ListPage(unknown session) = %+v, %v; want nothing", page, err)
	}
	for _, c := range []string{"x", "p", "p1", "p1.", "p0.1", "p1.-1"} {
		if _, err := p.ListPage(ctx(t), sid, session.PageQuery{Cursor: c}); !errors.Is(err, session.ErrCursor) {
			t.Errorf("ListPage(cursor %q) = %v, want ErrCursor", c, err)
		}
	}
}
