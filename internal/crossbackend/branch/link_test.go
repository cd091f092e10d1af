package branch_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/branch"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// A linkBackend is a backend opened for the tests of forks by reference:
// the store under branch.Wrap (sealed or not), the checkpoint store beside
// it, how a session is erased, and what a session keeps at rest.
type linkBackend struct {
	sessions session.Store
	runs     state.Store
	// erase deletes everything of a session: encrypt.Erase when sealed,
	// Clear otherwise.
	erase func(ctx context.Context, sid string) error
	// atRest returns the bytes the backend keeps for session sid, read
	// from the database (the SQLite WAL since mark, the PostgreSQL rows,
	// the Redis keys); nil for memory.
	atRest func(t *testing.T, sid string) int64
	// mark starts a measure of atRest (SQLite: truncates the WAL).
	mark func(t *testing.T)
}

var backendNames = []string{"memory", "sqlite", "postgres", "redis"}

// eachBackend runs f on every backend, plain and sealed.
func eachBackend(t *testing.T, f func(t *testing.T, b linkBackend)) {
	for _, name := range backendNames {
		for _, sealed := range []bool{false, true} {
			sub := name
			if sealed {
				sub += "/sealed"
			}
			t.Run(sub, func(t *testing.T) { f(t, openLinkBackend(t, name, sealed)) })
		}
	}
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func openLinkBackend(t *testing.T, name string, sealed bool) linkBackend {
	var kr *encrypt.Keyring
	var m []state.MarshalOption
	var u []state.UnmarshalOption
	if sealed {
		kr = encrypt.NewKeyring(encrypt.NewMemoryProvider("kek"))
		m, u = kr.Codec()
	}
	var db encrypt.Backend
	var lb linkBackend
	switch name {
	case "memory":
		lb.sessions, lb.runs = memory.New(), memstore.New(memstore.WithCodec(m, u))
		if sealed {
			ss := encrypt.WrapSessions(lb.sessions, kr)
			lb.sessions, lb.runs = ss, encrypt.WrapRuns(lb.runs, kr, ss)
		}
	case "sqlite":
		db, lb.atRest, lb.mark = openSQLite(t, m, u)
	case "postgres":
		db, lb.atRest = openPostgres(t, m, u)
	case "redis":
		db, lb.atRest = openRedis(t, m, u)
	}
	if db != nil {
		lb.sessions, lb.runs = db, db
		if sealed {
			s := encrypt.Wrap(db, kr)
			lb.sessions, lb.runs = s, s
		}
	}
	lb.erase = func(ctx context.Context, sid string) error { return lb.sessions.Clear(ctx, sid) }
	if sealed {
		lb.erase = func(ctx context.Context, sid string) error {
			_, err := encrypt.Erase(ctx, lb.sessions, lb.runs, sid)
			return err
		}
	}
	if lb.mark == nil {
		lb.mark = func(*testing.T) {}
	}
	return lb
}

func openSQLite(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) (encrypt.Backend, func(*testing.T, string) int64, func(*testing.T)) {
	path := filepath.Join(t.TempDir(), "fork.db")
	db, err := sqlite.Open(path, sqlite.WithCodec(m, u))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	raw, err := sql.Open("sqlite", path) // registered by session/sqlite
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	mark := func(t *testing.T) {
		if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatalf("wal_checkpoint: %v", err)
		}
	}
	atRest := func(t *testing.T, _ string) int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size() // the pages written since mark
	}
	return db, atRest, mark
}

func openPostgres(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) (encrypt.Backend, func(*testing.T, string) int64) {
	pool, err := pgxpool.New(context.Background(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	schema := "turnkit_fork_" + newID()
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	db, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema), postgres.WithCodec(m, u))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	atRest := func(t *testing.T, sid string) int64 {
		var total int64
		for _, table := range []string{"session_heads", "session_runs", "session_items", "session_index"} {
			var n int64
			q := fmt.Sprintf("SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM %s.%s t WHERE session_id = $1", pgx.Identifier{schema}.Sanitize(), table)
			if err := pool.QueryRow(context.Background(), q, sid).Scan(&n); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			total += n
		}
		return total
	}
	return db, atRest
}

func openRedis(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) (encrypt.Backend, func(*testing.T, string) int64) {
	o, err := goredis.ParseURL(testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	client := goredis.NewClient(o)
	prefix := "tkfork" + newID() + ":"
	keys := func(match string) []string {
		var out []string
		iter := client.Scan(context.Background(), 0, match, 1000).Iterator()
		for iter.Next(context.Background()) {
			out = append(out, iter.Val())
		}
		return out
	}
	t.Cleanup(func() {
		for _, k := range keys(prefix + "*") {
			_ = client.Del(context.Background(), k).Err()
		}
		client.Close()
	})
	atRest := func(t *testing.T, sid string) int64 {
		var total int64
		for _, k := range keys(prefix + "*{" + sid + "}*") {
			n, err := client.MemoryUsage(context.Background(), k).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		return total
	}
	return redis.New(client, redis.WithPrefix(prefix), redis.WithCodec(m, u)), atRest
}

// counting counts what is appended to the store it wraps.
type counting struct {
	session.Store
	mu           sync.Mutex
	items, bytes int64
}

func (c *counting) Append(ctx context.Context, sid, runID string, items []state.Item) error {
	c.mu.Lock()
	c.items += int64(len(items))
	for _, it := range items {
		c.bytes += int64(it.RawLen())
	}
	c.mu.Unlock()
	return c.Store.Append(ctx, sid, runID, items)
}

func (c *counting) ListPage(ctx context.Context, sid string, q session.PageQuery) (session.ItemPage, error) {
	return c.Store.(session.Pager).ListPage(ctx, sid, q)
}

func (c *counting) reset() (items, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	items, bytes = c.items, c.bytes
	c.items, c.bytes = 0, 0
	return items, bytes
}

// fill appends n items to session sid, in runs of up to 500 items.
func fill(t *testing.T, s session.Store, sid string, n int) {
	t.Helper()
	for run := 0; run*500 < n; run++ {
		k := min(500, n-run*500)
		items := make([]state.Item, k)
		for i := range items {
			items[i] = state.UserMessage(fmt.Sprintf("message %d of run %d", i, run)).WithSeq(int64(i + 1))
		}
		must(t, s.Append(t.Context(), sid, fmt.Sprintf("r%d", run), items))
	}
}

// TestForkWritesConstantBytes forks sessions of 100 and 10 000 items on
// every backend and measures what the fork wrote: the items and bytes
// appended to the store under the branch store, and what the database
// keeps for the fork (SQLite: its WAL; PostgreSQL: its rows; Redis: its
// keys). Neither grows with the parent's length.
func TestForkWritesConstantBytes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b linkBackend) {
		ctx := t.Context()
		c := &counting{Store: b.sessions}
		s := branch.Wrap(c)
		var rest [2]int64
		for i, n := range []int{100, 10000} {
			parent, fork := fmt.Sprintf("p%d", n), fmt.Sprintf("f%d", n)
			fill(t, s, parent, n)
			c.reset()
			b.mark(t)
			got, err := branch.Session(ctx, s, parent, fork, n)
			if err != nil || got != n {
				t.Fatalf("Session(%d) = %d, %v", n, got, err)
			}
			items, bytes := c.reset()
			if b.atRest != nil {
				rest[i] = b.atRest(t, fork)
			}
			t.Logf("fork of %d items: %d item, %d bytes appended; %d bytes at rest", n, items, bytes, rest[i])
			if items != 1 || bytes > 256 {
				t.Errorf("fork of %d items appended %d items, %d bytes; want 1 record under 256 bytes", n, items, bytes)
			}
			list, err := s.List(ctx, fork, 0)
			if err != nil || len(list) != n || list[n-1].Text() != fmt.Sprintf("message %d of run %d", (n-1)%500, (n-1)/500) {
				t.Fatalf("the fork of %d items lists %d items, %v", n, len(list), err)
			}
		}
		// What the database keeps for the fork is bounded and does not
		// grow with n (a copy of 10 000 items is over 400 kB); SQLite's
		// WAL counts whole pages.
		if rest[1] > 128<<10 || rest[1] > 2*rest[0]+8<<10 {
			t.Errorf("at rest: fork of 100 items %d bytes, of 10 000 items %d bytes", rest[0], rest[1])
		}
	})
}

// TestStoreConformance runs the session conformance suite on the branch
// store over every backend: sessions that are not forks read as ever.
func TestStoreConformance(t *testing.T) {
	for _, name := range backendNames {
		t.Run(name, func(t *testing.T) {
			sessiontest.TestStore(t, func(t *testing.T) session.Store {
				return branch.Wrap(openLinkBackend(t, name, false).sessions)
			})
		})
	}
}

func texts(items []state.Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(it.Text())
	}
	return b.String()
}

func msgs(texts ...string) []state.Item {
	items := make([]state.Item, len(texts))
	for i, t := range texts {
		items[i] = state.UserMessage(t).WithSeq(int64(i + 1))
	}
	return items
}

// listIs fails the test unless session sid lists want (texts, spaced).
func listIs(t *testing.T, s session.Store, sid, want string) {
	t.Helper()
	got, err := s.List(t.Context(), sid, 0)
	if err != nil || texts(got) != want {
		t.Fatalf("List(%s) = %q, %v; want %q", sid, texts(got), err, want)
	}
}

// TestForkByReference runs the cases of a fork by reference on every
// backend, plain and sealed.
func TestForkByReference(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b linkBackend, s *branch.Store)
	}{
		{"ReadsAndWritesApart", testForkApart},
		{"LimitAndStamps", testForkLimitStamps},
		{"ParentBelowPosition", testForkParentChanged},
		{"ParentErased", testForkParentErased},
		{"ForkOfFork", testForkOfFork},
		{"PopAndClear", testForkPop},
		{"PagesAndLookups", testForkPages},
	}
	eachBackend(t, func(t *testing.T, b linkBackend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.fn(t, b, branch.Wrap(b.sessions))
			})
		}
	})
}

// sid names a session of the running case, so cases sharing a backend do
// not meet.
func sid(t *testing.T, name string) string {
	return t.Name()[strings.LastIndexByte(t.Name(), '/')+1:] + "." + name
}

func testForkApart(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f := sid(t, "p"), sid(t, "f")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2")))
	must(t, s.Append(ctx, p, "b", msgs("b1", "b2")))
	if n, err := branch.Session(ctx, s, p, f, 3); err != nil || n != 3 {
		t.Fatalf("Session = %d, %v", n, err)
	}
	listIs(t, s, f, "a1 a2 b1")
	// Both go on apart: a late commit of run b in the parent (placed
	// before the position, written after the fork) is not the fork's.
	must(t, s.Append(ctx, p, "b", []state.Item{state.UserMessage("b3").WithSeq(3)}))
	must(t, s.Append(ctx, p, "a", []state.Item{state.UserMessage("a3").WithSeq(3)}))
	must(t, s.Append(ctx, f, "c", msgs("c1")))
	listIs(t, s, p, "a1 a2 a3 b1 b2 b3")
	listIs(t, s, f, "a1 a2 b1 c1")
	// The parent popped above the position (b3, b2): the fork does not
	// see it.
	for range 2 {
		if _, _, err := s.Pop(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	listIs(t, s, f, "a1 a2 b1 c1")
	if it, ok, err := s.Lookup(ctx, f, "c", 1); err != nil || !ok || it.Text() != "c1" {
		t.Errorf("Lookup of the fork's own item = %v, %v, %v", it, ok, err)
	}
	// The shared items are found and paged too, as the parent's runs'
	// (the late b3 and popped b2 of the parent are not the fork's).
	if it, ok, err := s.Lookup(ctx, f, "b", 1); err != nil || !ok || it.Text() != "b1" {
		t.Errorf("Lookup of a shared item = %v, %v, %v", it, ok, err)
	}
	if _, ok, err := s.Lookup(ctx, f, "a", 3); ok || err != nil {
		t.Errorf("Lookup of the parent's item written after the fork = %v, %v; want none", ok, err)
	}
	page, err := s.ListPage(ctx, f, session.PageQuery{})
	if err != nil || entriesOf(page) != "a:a1 a:a2 b:b1 c:c1" || page.Next != "" {
		t.Errorf("ListPage of the fork = %q (next %q), %v; want its shared items then its own", entriesOf(page), page.Next, err)
	}
	if _, err := branch.Session(ctx, s, p, f, 1); !errors.Is(err, branch.ErrTargetExists) {
		t.Errorf("fork into a session with items = %v, want ErrTargetExists", err)
	}
	if err := s.Append(ctx, f, "turnkit.branch.link", msgs("x")); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("append under the link's run ID = %v, want ErrInvalid", err)
	}
}

// entriesOf returns a page's entries as run:text, spaced.
func entriesOf(page session.ItemPage) string {
	var b strings.Builder
	for i, e := range page.Entries {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.RunID + ":" + e.Item.Text())
	}
	return b.String()
}

// testForkPages pages a fork of a fork, a page at a time for every page
// size: its own items, then the items each fork shares, as the runs that
// wrote them; and looks up each of them.
func testForkPages(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f, g := sid(t, "p"), sid(t, "f"), sid(t, "g")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2")))
	must(t, s.Append(ctx, p, "b", msgs("b1", "b2")))
	if _, err := branch.Session(ctx, s, p, f, 3); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "c", msgs("c1", "c2")))
	if _, err := branch.Session(ctx, s, f, g, 4); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, g, "d", msgs("d1")))
	const want = "a:a1 a:a2 b:b1 c:c1 d:d1"
	for limit := 1; limit <= 6; limit++ {
		var got []string
		q := session.PageQuery{Limit: limit}
		for pages := 0; ; pages++ {
			page, err := s.ListPage(ctx, g, q)
			if err != nil || len(page.Entries) > limit || pages > 5 {
				t.Fatalf("limit %d: ListPage(%q) = %q, %v", limit, q.Cursor, entriesOf(page), err)
			}
			got = append([]string{entriesOf(page)}, got...)
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		if joined := strings.Join(slices.DeleteFunc(got, func(s string) bool { return s == "" }), " "); joined != want {
			t.Errorf("limit %d: pages hold %q, want %q", limit, joined, want)
		}
	}
	for _, e := range []struct {
		run  string
		seq  int64
		text string
	}{{"a", 1, "a1"}, {"a", 2, "a2"}, {"b", 1, "b1"}, {"c", 1, "c1"}, {"d", 1, "d1"}} {
		if it, ok, err := s.Lookup(ctx, g, e.run, e.seq); err != nil || !ok || it.Text() != e.text {
			t.Errorf("Lookup(%s, %d) = %v, %v, %v; want %s", e.run, e.seq, it, ok, err, e.text)
		}
	}
	for _, e := range []struct {
		run string
		seq int64
	}{{"b", 2}, {"c", 2}, {"turnkit.branch.link", 1}} {
		if it, ok, err := s.Lookup(ctx, g, e.run, e.seq); ok || err != nil {
			t.Errorf("Lookup(%s, %d) = %v, %v, %v; want none: not the fork's", e.run, e.seq, it, ok, err)
		}
	}
	for _, c := range []string{"s0", "s9", "sx!", "s01"} {
		if _, err := s.ListPage(ctx, g, session.PageQuery{Cursor: c}); !errors.Is(err, session.ErrCursor) {
			t.Errorf("ListPage(cursor %q) = %v, want ErrCursor", c, err)
		}
	}
	must(t, s.Clear(ctx, p))
	if _, err := s.ListPage(ctx, g, session.PageQuery{}); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("ListPage of a fork whose root was cleared = %v, want ErrParentChanged", err)
	}
}

func testForkLimitStamps(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f := sid(t, "p"), sid(t, "f")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2", "a3")))
	if _, err := branch.Session(ctx, s, p, f, 10); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "b", msgs("b1", "b2")))
	for limit, want := range map[int]string{1: "b2", 2: "b1 b2", 3: "a3 b1 b2", 4: "a2 a3 b1 b2", 9: "a1 a2 a3 b1 b2"} {
		got, err := s.List(ctx, f, limit)
		if err != nil || texts(got) != want {
			t.Errorf("List(limit %d) = %q, %v; want %q", limit, texts(got), err, want)
		}
	}
	// Run c's history, read as a run reads it, and read back at its
	// stamp after more was written: the same items.
	h, err := s.ListBefore(ctx, f, "c", session.HistoryQuery{})
	if err != nil || texts(h.Items) != "a1 a2 a3 b1 b2" || h.Stamp < 2 {
		t.Fatalf("ListBefore = %q at %d, %v", texts(h.Items), h.Stamp, err)
	}
	must(t, s.Append(ctx, f, "b", []state.Item{state.UserMessage("b3").WithSeq(3)}))
	must(t, s.Append(ctx, f, "c", msgs("c1")))
	again, err := s.ListBefore(ctx, f, "c", session.HistoryQuery{Stamp: h.Stamp, Limit: 4})
	if err != nil || texts(again.Items) != "a2 a3 b1 b2" {
		t.Errorf("ListBefore at the stamp = %q, %v; want the history read before", texts(again.Items), err)
	}
	// A stamp at the link record's leaves the shared items out, as it
	// leaves out the fork's items written after.
	first, err := s.ListBefore(ctx, f, "c", session.HistoryQuery{Stamp: 1})
	if err != nil || len(first.Items) != 0 {
		t.Errorf("ListBefore at stamp 1 = %q, %v; want nothing", texts(first.Items), err)
	}
}

func testForkParentChanged(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f, g := sid(t, "p"), sid(t, "f"), sid(t, "g")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2", "a3")))
	if _, err := branch.Session(ctx, s, p, f, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.Session(ctx, s, p, g, 3); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "b", msgs("b1")))
	// A pop of a3 is below g's position, above f's.
	if _, _, err := s.Pop(ctx, p); err != nil {
		t.Fatal(err)
	}
	listIs(t, s, f, "a1 a2 b1")
	if _, err := s.List(ctx, g, 0); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("List of a fork whose parent popped below its position = %v, want ErrParentChanged", err)
	}
	// Popped and written again is not the item forked either.
	must(t, s.Append(ctx, p, "a", []state.Item{state.UserMessage("a3").WithSeq(3)}))
	if _, err := s.List(ctx, g, 0); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("List after the parent wrote its item again = %v, want ErrParentChanged", err)
	}
	must(t, s.Clear(ctx, p))
	if _, err := s.ListBefore(ctx, f, "c", session.HistoryQuery{Limit: 1}); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("ListBefore of a fork whose parent was cleared = %v, want ErrParentChanged", err)
	}
	// The fork's own items stay, in the store under it.
	own, err := s.Inner().List(ctx, f, 1)
	if err != nil || texts(own) != "b1" {
		t.Errorf("the fork's own items = %q, %v", texts(own), err)
	}
	must(t, s.Clear(ctx, f))
	listIs(t, s, f, "")
}

func testForkParentErased(t *testing.T, b linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f := sid(t, "p"), sid(t, "f")
	must(t, s.Append(ctx, p, "a", msgs("secret-1", "secret-2")))
	if _, err := branch.Session(ctx, s, p, f, 2); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "b", msgs("mine")))
	// Erasing the fork leaves the parent as it was.
	must(t, b.erase(ctx, f))
	listIs(t, s, f, "")
	listIs(t, s, p, "secret-1 secret-2")
	// Erasing the parent erases what a fork shared with it.
	g := sid(t, "g")
	if _, err := branch.Session(ctx, s, p, g, 2); err != nil {
		t.Fatal(err)
	}
	must(t, b.erase(ctx, p))
	if _, err := s.List(ctx, g, 0); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("List of a fork of an erased session = %v, want ErrParentChanged", err)
	}
}

func testForkOfFork(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f, g := sid(t, "p"), sid(t, "f"), sid(t, "g")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2")))
	if _, err := branch.Session(ctx, s, p, f, 1); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "b", msgs("b1", "b2")))
	if n, err := branch.Session(ctx, s, f, g, 2); err != nil || n != 2 {
		t.Fatalf("fork of a fork = %d, %v", n, err)
	}
	must(t, s.Append(ctx, g, "c", msgs("c1")))
	listIs(t, s, g, "a1 b1 c1")
	must(t, s.Append(ctx, f, "b", []state.Item{state.UserMessage("b3").WithSeq(3)}))
	listIs(t, s, f, "a1 b1 b2 b3")
	listIs(t, s, g, "a1 b1 c1")
	// A change at the root reaches the fork of the fork as an error.
	must(t, s.Clear(ctx, p))
	if _, err := s.List(ctx, g, 0); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("List of a fork of a fork whose root was cleared = %v, want ErrParentChanged", err)
	}
	// Nor does a fork of it start (so no chain of links closes a cycle:
	// a session cleared to be forked anew cannot fork from its forks).
	if _, err := branch.Session(ctx, s, g, p, 0); !errors.Is(err, branch.ErrParentChanged) {
		t.Errorf("fork of a fork whose root was cleared = %v, want ErrParentChanged", err)
	}
}

func testForkPop(t *testing.T, _ linkBackend, s *branch.Store) {
	ctx := t.Context()
	p, f := sid(t, "p"), sid(t, "f")
	must(t, s.Append(ctx, p, "a", msgs("a1", "a2")))
	if _, err := branch.Session(ctx, s, p, f, 2); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, f, "b", msgs("b1", "b2")))
	for _, want := range []string{"b2", "b1"} {
		it, ok, err := s.Pop(ctx, f)
		if err != nil || !ok || it.Text() != want {
			t.Fatalf("Pop = %v, %v, %v; want %s", it, ok, err, want)
		}
	}
	if _, _, err := s.Pop(ctx, f); !errors.Is(err, branch.ErrShared) {
		t.Errorf("Pop at the shared items = %v, want ErrShared", err)
	}
	listIs(t, s, f, "a1 a2")
	// Fork the fork lower to drop a shared item.
	g := sid(t, "g")
	if _, err := branch.Session(ctx, s, f, g, 1); err != nil {
		t.Fatal(err)
	}
	listIs(t, s, g, "a1")
	must(t, s.Clear(ctx, f))
	listIs(t, s, f, "")
	listIs(t, s, p, "a1 a2")
	if _, ok, err := s.Pop(ctx, f); ok || err != nil {
		t.Errorf("Pop of a cleared fork = %v, %v", ok, err)
	}
}

// TestForkRunLinked forks a finished run into a new session through a
// branch store: the runs placed before it are linked, its own items
// copied under the fork's run ID.
func TestForkRunLinked(t *testing.T) {
	ctx := t.Context()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fill(t, store, "s", 1000)
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("Hello."))}
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("Hi."), pipeline.WithRunID("run-1"), pipeline.WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	c := &counting{Store: store}
	s := branch.Wrap(c)
	fork, err := branch.Run(ctx, s, store, "run-1", branch.Target{RunID: "run-1b", SessionID: "s2"})
	if err != nil || fork.SessionID() != "s2" {
		t.Fatalf("branch.Run = %v, %v", fork, err)
	}
	if items, _ := c.reset(); items != 3 {
		t.Errorf("the fork appended %d items, want the link and the run's 2 items", items)
	}
	orig, _ := store.List(ctx, "s", 0)
	got, err := s.List(ctx, "s2", 0)
	if err != nil || !equalItems(got, orig) {
		t.Fatalf("the fork's session holds %d items, %v; want the %d of the original", len(got), err, len(orig))
	}
	if it, ok, err := s.Lookup(ctx, "s2", "run-1b", 2); err != nil || !ok || it.Text() != "Hello." {
		t.Errorf("Lookup of the fork run's item = %v, %v, %v", it, ok, err)
	}
}
