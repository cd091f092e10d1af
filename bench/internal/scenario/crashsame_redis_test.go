package scenario

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// TestSameRedisWrites checks that the raw-same-writes driver of Redis
// writes what the store writes for the same crash-safe tool turns, no
// less and nothing else, in as many round trips. It runs the crash-safe
// chain on the store (checkpoint.New(store, WithSession(store)), as the
// crash-safe scenarios do) from the session's history, in the run and
// session of recordTurnWrites, and takes what the store holds before the
// save of tool turn rawTurnMark and after each save and commit of that
// turn and the next two; the driver plays the same three turns (the
// recorded ones, then the first again, moved on: see play) from its
// reset, and what it holds is taken after each of its round trips. The
// writes of a save or a commit are the differences between the
// snapshots around it, key by key, the prefix left out: every field,
// member and string written or changed, with its value, and every
// written key's type and growth (HLEN, ZCARD, ...). A snapshot after each
// write, not each turn, sees the writes a turn's commit overwrites (the
// head, the summary of the save before the tool).
//
// In the first two turns, which the driver replays byte for byte, each
// save's and commit's writes must be the same on both sides after
// normalizing what is the run's own: the version (in the head hash, the
// pieces' "<version>:" and the summary's "v"), the write stamps (the
// counter and the stamps' scores) and the run's serial in the listing,
// each relative to its value before the write. In the third, whose items
// are not the recorded ones (the IDs, the turn and the usage differ),
// each key must grow and change by the same number of fields or members.
// And each turn must take the driver the round trips it takes the store.
func TestSameRedisWrites(t *testing.T) {
	if os.Getenv("TURNKIT_REDIS_URL") == "" {
		t.Skip("TURNKIT_REDIS_URL is not set")
	}
	ctx := context.Background()
	ws := recordTurnWrites(t, 10)
	const turns, exact = 3, 2

	store := storeTurnWrites(t, turns)

	const prefix = "turnbench-same-test:"
	drv := openSameRedisAt(t, prefix)
	defer drv.close()
	reader := goredis.NewClient(drv.client.Options())
	defer reader.Close()
	defer dropPrefix(ctx, reader, prefix)
	var snaps []keySnapshot
	rt := &roundTrips{}
	drv.client.AddHook(rt)
	if err := drv.seed(ctx, makeHistory(10)); err != nil {
		t.Fatal(err)
	}
	// The first head is not the first save's, so that the save's write of
	// its head changes what is stored, as the store's does.
	if err := drv.reset(ctx, ws[1].commit.head); err != nil {
		t.Fatal(err)
	}
	snaps = append(snaps, snapshotPrefix(t, reader, prefix))
	rt.after = func() { snaps = append(snaps, snapshotPrefix(t, reader, prefix)) }
	var trips []int64
	for j := range turns {
		n := rt.n.Load()
		if err := ws.play(ctx, drv, j); err != nil {
			t.Fatalf("turn %d: %v", j, err)
		}
		trips = append(trips, rt.n.Load()-n)
	}
	rt.after = nil

	for j := range turns {
		if want := store.trips[2*j] + store.trips[2*j+1]; trips[j] != want {
			t.Errorf("turn %d: the driver took %d round trips, the store %d (save %d, commit %d)", j, trips[j], want,
				store.trips[2*j], store.trips[2*j+1])
		}
	}
	if len(snaps) != len(store.snaps) {
		t.Fatalf("the driver made %d writes in %d turns, the store %d", len(snaps)-1, turns, len(store.snaps)-1)
	}
	for i := range 2 * turns {
		what := fmt.Sprintf("turn %d's %s", i/2, [2]string{"save", "commit"}[i%2])
		if i < 2*exact {
			compareWrites(t, what, normalized(store.snaps[i], store.snaps[i+1]), normalized(snaps[i], snaps[i+1]))
		} else {
			compareWrites(t, what, shape(store.snaps[i], store.snaps[i+1]), shape(snaps[i], snaps[i+1]))
		}
	}
}

// storeWrites is what storeTurnWrites saw of the store: what it held
// before the first save taken and after each save and commit, and the
// round trips of each.
type storeWrites struct {
	snaps []keySnapshot
	trips []int64
}

// storeTurnWrites runs the crash-safe chain on the Redis store, under a
// prefix of its own, and returns what the store held before the save of
// tool turn rawTurnMark and after each save and commit of it and the
// turns-1 next, with the round trips of each. It fails unless each of
// these turns is one Save, then one SaveAppend of two items.
func storeTurnWrites(t *testing.T, turns int) storeWrites {
	ctx := context.Background()
	const prefix = "turnbench-same-test-store:"
	opts, err := goredis.ParseURL(os.Getenv("TURNKIT_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	reader := goredis.NewClient(opts)
	t.Cleanup(func() { _ = reader.Close() })
	if err := dropPrefix(ctx, reader, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dropPrefix(context.Background(), reader, prefix) })
	rt := &roundTrips{}
	counted := goredis.NewClient(opts)
	t.Cleanup(func() { _ = counted.Close() })
	counted.AddHook(rt)
	spy := &spyRedis{Store: redis.New(counted, redis.WithPrefix(prefix)), rt: rt, turns: turns,
		snap: func() keySnapshot { return snapshotPrefix(t, reader, prefix) }}
	if err := spy.Append(ctx, rawSessionID, "history", makeHistory(10)); err != nil {
		t.Fatal(err)
	}
	cp := checkpoint.New(spy, checkpoint.WithSession(spy))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: "bench", Model: turnsModel(rawTurnMark + turns + 1), Tools: []pipeline.Tool{trivialTool()}}
	run := state.NewRun(rawRunID, "bench")
	runcore.SetSessionID(run, rawSessionID)
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run)); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("save commit(2) ", turns)
	if got := strings.Join(spy.log, " ") + " "; got != want || len(spy.snaps) != 2*turns+1 {
		t.Fatalf("the store's tool turns %d to %d wrote %q (%d snapshots), want %q", rawTurnMark, rawTurnMark+turns-1, got, len(spy.snaps), want)
	}
	return storeWrites{snaps: spy.snaps, trips: spy.trips}
}

// spyRedis is the Redis store that, from the save before tool turn
// rawTurnMark (the run's commits are its SaveAppends, the first its
// input's) and for turns tool turns, takes what the store holds before
// that save and after each save and commit, and logs each save and
// commit with its round trips.
type spyRedis struct {
	*redis.Store
	rt      *roundTrips
	turns   int
	snap    func() keySnapshot
	appends int
	on      bool
	log     []string
	trips   []int64
	snaps   []keySnapshot
}

func (s *spyRedis) Save(ctx context.Context, run *state.Run) error {
	if s.appends == rawTurnMark && len(s.snaps) == 0 {
		s.on = true
		s.snaps = append(s.snaps, s.snap())
	}
	n := s.rt.n.Load()
	err := s.Store.Save(ctx, run)
	if s.on {
		s.log = append(s.log, "save")
		s.trips = append(s.trips, s.rt.n.Load()-n)
		s.snaps = append(s.snaps, s.snap())
	}
	return err
}

func (s *spyRedis) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	n := s.rt.n.Load()
	err := s.Store.SaveAppend(ctx, run, sessionID, items)
	s.appends++
	if s.on {
		s.log = append(s.log, fmt.Sprintf("commit(%d)", len(items)))
		s.trips = append(s.trips, s.rt.n.Load()-n)
		s.snaps = append(s.snaps, s.snap())
		s.on = len(s.snaps) <= 2*s.turns
	}
	return err
}

// roundTrips counts a client's round trips: each command sent alone, and
// each pipeline or MULTI/EXEC; after each pipeline it calls after, if
// not nil.
type roundTrips struct {
	n     atomic.Int64
	after func()
}

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r.n.Add(1)
		err := next(ctx, cmds)
		if r.after != nil {
			r.after()
		}
		return err
	}
}

// A keySnapshot is what a Redis server holds under a prefix, the prefix
// cut from the keys: each key's type ("<key>\x00type"), each field of a
// hash ("<key>\x00h\x00<field>": its value), each member of a sorted set
// ("<key>\x00z\x00<member>": its score), each member of a set or element
// of a list, and each string ("<key>\x00s": its value), and each key's
// time to live if it has one ("<key>\x00ttl").
type keySnapshot map[string]string

// snapshotPrefix reads what the server holds under prefix.
func snapshotPrefix(t *testing.T, c *goredis.Client, prefix string) keySnapshot {
	ctx := context.Background()
	out := keySnapshot{}
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		k := strings.TrimPrefix(key, prefix) + "\x00"
		typ, err := c.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k+"type"] = typ
		if ttl, err := c.PTTL(ctx, key).Result(); err != nil {
			t.Fatal(err)
		} else if ttl >= 0 {
			out[k+"ttl"] = "set"
		}
		switch typ {
		case "hash":
			m, err := c.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				out[k+"h\x00"+f] = v
			}
		case "zset":
			zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range zs {
				out[k+"z\x00"+z.Member.(string)] = strconv.FormatFloat(z.Score, 'f', -1, 64)
			}
		case "string":
			v, err := c.Get(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			out[k+"s"] = v
		case "set":
			ms, err := c.SMembers(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				out[k+"m\x00"+m] = ""
			}
		case "list":
			vs, err := c.LRange(ctx, key, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				out[k+"l\x00"+strconv.Itoa(i)] = v
			}
		default:
			t.Fatalf("key %q of type %s", key, typ)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// keyOf returns the key of a snapshot's entry.
func keyOf(entry string) string { k, _, _ := strings.Cut(entry, "\x00"); return k }

// written returns what after holds that before does not, or holds with
// another value ("<removed>" for what before holds alone), with the type
// of each key written and its growth in fields or members
// ("<key>\x00grows": after's count less before's).
func written(before, after keySnapshot) keySnapshot {
	out := keySnapshot{}
	count := func(s keySnapshot) map[string]int {
		n := map[string]int{}
		for e := range s {
			if !strings.HasSuffix(e, "\x00type") && !strings.HasSuffix(e, "\x00ttl") {
				n[keyOf(e)]++
			}
		}
		return n
	}
	for e, v := range after {
		if w, ok := before[e]; !ok || w != v {
			out[e] = v
		}
	}
	for e := range before {
		if _, ok := after[e]; !ok {
			out[e] = "<removed>"
		}
	}
	nb, na := count(before), count(after)
	keys := map[string]bool{}
	for e := range out {
		keys[keyOf(e)] = true
	}
	for k := range keys {
		out[k+"\x00type"] = after[k+"\x00type"]
		out[k+"\x00grows"] = strconv.Itoa(na[k] - nb[k])
	}
	return out
}

var summaryVersion = regexp.MustCompile(`"v":(\d+)}$`)

// normalized returns the writes between before and after with what is
// the run's own made relative to before: the version in the head hash,
// the pieces and the summary; the write stamps; the run's serial.
func normalized(before, after keySnapshot) keySnapshot {
	const (
		head    = "checkpoint:{" + rawRunID + "}"
		sess    = "session:{" + rawSessionID + "}"
		stamp   = sess + ":stamp\x00s"
		summary = "runs:{index}:sum\x00h\x00" + rawRunID
	)
	version, _ := strconv.ParseInt(before[head+"\x00h\x00v"], 10, 64)
	stamps, _ := strconv.ParseFloat(before[stamp], 64)
	serial, _, _ := strings.Cut(before[summary], ":")
	rel := func(s string, base int64) string {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return s
		}
		return fmt.Sprintf("%+d", n-base)
	}
	out := keySnapshot{}
	for e, v := range written(before, after) {
		switch {
		case e == head+"\x00h\x00v":
			v = rel(v, version)
		case strings.HasPrefix(e, head+":items\x00h\x00"):
			if ver, rest, ok := strings.Cut(v, ":"); ok {
				v = rel(ver, version) + ":" + rest
			}
		case e == summary:
			if s, rest, ok := strings.Cut(v, ":"); ok && s == serial {
				v = "<serial>:" + rest
			}
			if m := summaryVersion.FindStringSubmatch(v); m != nil {
				v = v[:len(v)-len(m[0])] + `"v":` + rel(m[1], version) + "}"
			}
		case e == stamp:
			v = rel(v, int64(stamps))
		case strings.HasPrefix(e, sess+":stamps\x00z\x00"):
			v = rel(v, int64(stamps))
		}
		out[e] = v
	}
	return out
}

// shape returns, for each key written between before and after, its type,
// its growth and the number of its fields or members written.
func shape(before, after keySnapshot) keySnapshot {
	out := keySnapshot{}
	n := map[string]int{}
	for e, v := range written(before, after) {
		switch {
		case strings.HasSuffix(e, "\x00type"), strings.HasSuffix(e, "\x00grows"):
			out[e] = v
		default:
			n[keyOf(e)]++
		}
	}
	for k, c := range n {
		out[k+"\x00written"] = strconv.Itoa(c)
	}
	return out
}

// compareWrites fails t for every entry the store's writes and the
// driver's do not share, or hold with other values.
func compareWrites(t *testing.T, what string, store, driver keySnapshot) {
	t.Helper()
	if len(store) == 0 {
		t.Fatalf("%s: the store wrote nothing", what)
	}
	show := func(e string) string { return strconv.Quote(strings.ReplaceAll(e, "\x00", " ")) }
	var diffs []string
	for e, v := range store {
		w, ok := driver[e]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("the driver does not write %s (the store writes %.120q)", show(e), v))
		case w != v:
			diffs = append(diffs, fmt.Sprintf("%s: the driver writes %.120q, the store %.120q", show(e), w, v))
		}
	}
	for e, v := range driver {
		if _, ok := store[e]; !ok {
			diffs = append(diffs, fmt.Sprintf("the store does not write %s (the driver writes %.120q)", show(e), v))
		}
	}
	slices.Sort(diffs)
	for _, d := range diffs {
		t.Errorf("%s: %s", what, d)
	}
	if len(diffs) == 0 {
		t.Logf("%s: %d entries written alike", what, len(store))
	}
}
