package redis_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

var (
	sinkErr  error
	benchRun atomic.Int64 // each benchmark invocation appends to a new session
)

func benchSession() string { return "bench-" + strconv.FormatInt(benchRun.Add(1), 10) }

// BenchmarkAppend compares a committed append of three items through the
// Store (one EVALSHA that checks and writes) with go-redis adding the same
// three members with one ZADD on the same server, in the same run ("raw",
// turnbench's baseline), and with go-redis making every durable write the
// store's commit makes ("raw-same-writes", see rawSameWrites).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	client, prefix := testClient(b)
	b.Run("turnkit", func(b *testing.B) {
		s := redis.New(client, redis.WithPrefix(prefix))
		b.ReportAllocs()
		sid := benchSession()
		var i int64
		for b.Loop() {
			sinkErr = s.Append(ctx, sid, "run", sessiontest.Batch(i))
			i++
		}
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
	})
	b.Run("raw-same-writes", func(b *testing.B) { rawSameWrites(b, client, prefix+benchSession()) })
	b.Run("raw", func(b *testing.B) {
		key := prefix + benchSession()
		b.ReportAllocs()
		var i int64
		for b.Loop() {
			its := sessiontest.Batch(i)
			members := make([]goredis.Z, len(its))
			for j, it := range its {
				members[j] = goredis.Z{Member: fmt.Sprintf("%016x%016x", 1, it.Seq()) + it.Kind().String() + it.Name() + string(it.Raw())}
			}
			sinkErr = client.ZAdd(ctx, key, members...).Err()
			i++
		}
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
	})
}

// BenchmarkSave saves a run once per turn (a tool call and its output, as
// the checkpointer saves it) after the run started from a session history
// of 10, 1 000 and 10 000 items, and reports the bytes each save sends
// (B/save, every argument of every command). "delta" is Store.Save;
// "whole" writes state.Marshal of the run with one HSET per turn, as this
// package's earlier format did, for comparison. The time includes
// recording the turn on the run. The run grows by two items an iteration,
// so compare runs of one length: -benchtime=1000x.
func BenchmarkSave(b *testing.B) {
	ctx := context.Background()
	client, prefix := testClient(b)
	counter := &writeCounter{}
	client.AddHook(counter)
	for _, n := range []int{10, 1000, 10000} {
		for _, mode := range []string{"delta", "whole"} {
			b.Run(fmt.Sprintf("history=%d/%s", n, mode), func(b *testing.B) {
				s := redis.New(client, redis.WithPrefix(prefix))
				r := state.NewRun(benchSession(), "assistant")
				runcore.SetHistory(r, history(n))
				runcore.AddInput(r, state.UserMessage("and tomorrow?"))
				save := func() error { return s.Save(ctx, r) }
				if mode == "whole" {
					key := prefix + "whole:" + r.ID()
					save = func() error {
						data, err := state.Marshal(r)
						if err != nil {
							return err
						}
						return client.HSet(ctx, key, "v", r.Version(), "d", data).Err()
					}
				}
				turn := 1
				addTurn(b, r, turn)
				if err := save(); err != nil { // the first save writes the history
					b.Fatal(err)
				}
				counter.reset()
				b.ReportAllocs()
				for b.Loop() {
					turn++
					addTurn(b, r, turn)
					sinkErr = save()
				}
				if sinkErr != nil {
					b.Fatal(sinkErr)
				}
				b.ReportMetric(float64(counter.bytes.Load())/float64(turn-1), "B/save")
			})
		}
	}
}

// BenchmarkToolTurn makes the durable writes of a crash-safe tool turn,
// one turn an iteration: the save before the tool (the run with the
// call's response recorded) and the commit (the next save, with the call
// and its output appended to the session), in runs of 64 turns from a
// session of 10 items of history, as turnbench's crash-safe rows make
// them; between runs, untimed, the session is cleared and its history
// appended again. "store" makes them through the store (Save, then
// SaveAppend); "raw-same-writes" with go-redis, the same durable writes
// in one MULTI/EXEC each (see rawTurnWrites). Run it against a server of
// its own to read the server's work per turn (INFO commandstats, or
// callgrind).
func BenchmarkToolTurn(b *testing.B) {
	client, prefix := testClient(b)
	s := redis.New(client, redis.WithPrefix(prefix))
	b.Run("store", func(b *testing.B) {
		toolTurns(b, s, s.Save, func(ctx context.Context, r *state.Run, sid string, items []state.Item) error {
			return s.SaveAppend(ctx, r, sid, items)
		})
	})
	b.Run("raw-same-writes", func(b *testing.B) {
		w := rawTurnWrites{client: client, s: s, prefix: prefix}
		toolTurns(b, s, func(ctx context.Context, r *state.Run) error { return w.write(ctx, r, "", nil) }, w.write)
	})
}

// toolTurns times tool turns (see BenchmarkToolTurn) whose durable writes
// are save and commit, setting the session up with s between runs.
func toolTurns(b *testing.B, s *redis.Store, save func(context.Context, *state.Run) error,
	commit func(context.Context, *state.Run, string, []state.Item) error) {
	ctx := context.Background()
	sid := benchSession()
	const perRun = 64
	var r *state.Run
	turn := perRun
	b.ReportAllocs()
	for b.Loop() {
		if turn == perRun {
			b.StopTimer()
			r = startToolTurns(b, s, sid, save)
			turn = 0
			b.StartTimer()
		}
		turn++
		sinkErr = toolTurn(ctx, r, sid, turn, save, commit)
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
}

// startToolTurns clears session sid, appends 10 items of history to it
// and returns a new run of it, saved with save.
func startToolTurns(tb testing.TB, s *redis.Store, sid string, save func(context.Context, *state.Run) error) *state.Run {
	ctx := context.Background()
	must(tb, s.Clear(ctx, sid))
	must(tb, s.Append(ctx, sid, "history", history(10)))
	r := state.NewRun(newRunID(), "assistant")
	runcore.SetSessionID(r, sid)
	must(tb, save(ctx, r))
	return r
}

// toolTurn makes tool turn turn of run r of session sid: the model's call
// recorded, the save, then the call's output recorded and the commit.
func toolTurn(ctx context.Context, r *state.Run, sid string, turn int, save func(context.Context, *state.Run) error,
	commit func(context.Context, *state.Run, string, []state.Item) error) error {
	first := runcore.Reserve(r, 2)
	id := fmt.Sprintf("call_%d", turn)
	call := state.ToolCall("fc_"+id, id, "lookup", `{"q":"weather in Paris"}`).WithSeq(first)
	if err := runcore.Record(r, call); err != nil {
		return err
	}
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	runcore.SetTurn(r, turn)
	if err := save(ctx, r); err != nil {
		return err
	}
	output := state.ToolOutput(id, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(first + 1)
	if err := runcore.Record(r, output); err != nil {
		return err
	}
	return commit(ctx, r, sid, []state.Item{call, output})
}

// BenchmarkToolTurnInstructions counts the instructions the Redis server
// runs for a tool turn (see BenchmarkToolTurn), the store's and
// raw-same-writes', with valgrind's callgrind: unlike the time a turn
// takes, the count is the same from one run to the next, so a change to
// a script can be weighed on a shared machine. It reports
// server-instr/turn, over one run of b.N turns (its first five not
// counted). It needs a server of its own started under callgrind, in the
// folder its profiles go to (valgrind's default file name), and named by
// TURNKIT_REDIS_CALLGRIND_URL (.ci/services starts one, for
// TestToolTurnInstructionBudget); it is skipped without one:
//
//	valgrind --tool=callgrind redis-server --port 56390 --save '' --appendonly no &
//	TURNKIT_REDIS_CALLGRIND_URL=redis://127.0.0.1:56390/0 \
//		go test -run '^$' -bench ToolTurnInstructions -benchtime 1000x ./session/redis
//
// Under callgrind the server runs some fifty times slower: a fixed count
// of turns keeps the run short.
func BenchmarkToolTurnInstructions(b *testing.B) {
	url := os.Getenv("TURNKIT_REDIS_CALLGRIND_URL")
	if url == "" {
		b.Skip("TURNKIT_REDIS_CALLGRIND_URL is not set (a Redis server under callgrind)")
	}
	client, prefix := testClientAt(b, url)
	cg := openCallgrind(b, client)
	s := redis.New(client, redis.WithPrefix(prefix))
	b.Run("store", func(b *testing.B) {
		instrTurns(b, cg, s, s.Save, func(ctx context.Context, r *state.Run, sid string, items []state.Item) error {
			return s.SaveAppend(ctx, r, sid, items)
		})
	})
	b.Run("raw-same-writes", func(b *testing.B) {
		w := rawTurnWrites{client: client, s: s, prefix: prefix}
		instrTurns(b, cg, s, func(ctx context.Context, r *state.Run) error { return w.write(ctx, r, "", nil) }, w.write)
	})
}

// instrTurns makes b.N tool turns of one run and reports the server's
// instructions a turn, as cg counts them, from the sixth turn on.
func instrTurns(b *testing.B, cg *callgrind, s *redis.Store, save func(context.Context, *state.Run) error,
	commit func(context.Context, *state.Run, string, []state.Item) error) {
	ctx := context.Background()
	r, sid, turn := countedRun(b, cg, s, save, commit)
	for b.Loop() {
		sinkErr = toolTurn(ctx, r, sid, turn, save, commit)
		turn++
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
	b.ReportMetric(cg.count(b)/float64(b.N), "server-instr/turn")
}

// countedRun starts a run of tool turns for cg to count (see
// startToolTurns), makes its first five turns, which are not counted,
// and zeroes the count; it returns the run, its session and its next
// turn.
func countedRun(tb testing.TB, cg *callgrind, s *redis.Store, save func(context.Context, *state.Run) error,
	commit func(context.Context, *state.Run, string, []state.Item) error) (*state.Run, string, int) {
	ctx := context.Background()
	sid := benchSession()
	r := startToolTurns(tb, s, sid, save)
	const warm = 5
	for turn := 1; turn <= warm; turn++ {
		must(tb, toolTurn(ctx, r, sid, turn, save, commit))
	}
	cg.zero(tb)
	return r, sid, warm + 1
}

// callgrind is a Redis server's process under valgrind's callgrind,
// driven with callgrind_control.
type callgrind struct {
	pid string // the server's process ID
	dir string // the folder it writes its profiles to (its working one)
}

// openCallgrind returns the server client talks to as a callgrind
// process.
func openCallgrind(tb testing.TB, client *goredis.Client) *callgrind {
	ctx := context.Background()
	info, err := client.Info(ctx, "server").Result()
	must(tb, err)
	cg := &callgrind{}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			cg.pid = v
		}
	}
	dir, err := client.ConfigGet(ctx, "dir").Result()
	must(tb, err)
	cg.dir = dir["dir"]
	if cg.pid == "" || cg.dir == "" {
		tb.Fatalf("the server's process ID %q or folder %q is unknown", cg.pid, cg.dir)
	}
	return cg
}

// control runs callgrind_control with args on the server's process.
func (cg *callgrind) control(tb testing.TB, args ...string) {
	if out, err := exec.Command("callgrind_control", append(args, cg.pid)...).CombinedOutput(); err != nil {
		tb.Fatalf("callgrind_control %v: %v: %s", args, err, out)
	}
}

// zero starts the count again.
func (cg *callgrind) zero(tb testing.TB) { cg.control(tb, "--zero") }

// count returns the instructions counted since the last zero: it dumps
// the profile and reads its total from the newest dump.
func (cg *callgrind) count(tb testing.TB) float64 {
	cg.control(tb, "--dump")
	dumps, err := filepath.Glob(filepath.Join(cg.dir, "callgrind.out."+cg.pid+".*"))
	must(tb, err)
	newest, part := "", -1
	for _, d := range dumps {
		if n, err := strconv.Atoi(d[strings.LastIndexByte(d, '.')+1:]); err == nil && n > part {
			newest, part = d, n
		}
	}
	if newest == "" {
		tb.Fatalf("no callgrind dump of process %s in %s", cg.pid, cg.dir)
	}
	data, err := os.ReadFile(newest)
	must(tb, err)
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			must(tb, err)
			return n
		}
	}
	tb.Fatalf("%s holds no summary line", newest)
	return 0
}

// rawTurnWrites makes, with go-redis, the durable writes of a save of the
// store and of its SaveAppend, in one MULTI/EXEC (one round trip) each,
// of the store's sizes, into the store's keys: the run's head (HSET of
// its version and head) and its delta's items (HSET), the run's summary
// in the listing (HSET), and with items, their members (ZADD), the write
// stamp (INCR) and their stamps (ZADD), a call's member of the calls set
// (ZADD) and the outputs hash's fields of a call and of its output
// (HSET). What the store adds is its checks (the stored version and the
// run's serial, the run's place, one ZLEXCOUNT) and its scripts.
type rawTurnWrites struct {
	client goredis.UniversalClient
	s      *redis.Store // whose keys it writes
	prefix string
	stamp  int64
}

func (w *rawTurnWrites) write(ctx context.Context, r *state.Run, sid string, items []state.Item) error {
	d, err := r.Delta()
	if err != nil {
		return err
	}
	rk := w.s.RunKeys(r.ID())
	tag := strconv.FormatInt(d.Version, 10) + ":"
	pieces := make([]any, 0, 2*len(d.Items))
	for _, p := range d.Items {
		pieces = append(pieces, strconv.FormatInt(p.Seq, 10), tag+string(p.Data))
	}
	summary := fmt.Sprintf(`1:1:%d:%s{"a":%q,"u":%d,"p":0,"v":%d}`, len(sid), sid, d.Summary.Agent, d.Summary.Turn, d.Version)
	_, err = w.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, rk[0], "v", d.Version, "d", d.Head)
		if len(pieces) > 0 {
			p.HSet(ctx, rk[1], pieces...)
		}
		p.HSet(ctx, w.prefix+"runs:{index}:sum", r.ID(), summary)
		if len(items) == 2 { // a call and its output
			sk := w.s.SessionKeys(sid)
			const place = "0000000000000002"
			w.stamp++
			c, o := place+fmt.Sprintf("%016x", items[0].Seq()), place+fmt.Sprintf("%016x", items[1].Seq())
			id := items[0].CallID()
			ref := place + fmt.Sprintf("%08x", len(id)) + id + c[16:]
			p.ZAdd(ctx, sk[0], goredis.Z{Member: c + items[0].Kind().String() + items[0].Name() + string(items[0].Raw())},
				goredis.Z{Member: o + items[1].Kind().String() + items[1].Name() + string(items[1].Raw())})
			p.Incr(ctx, sk[6])
			p.ZAdd(ctx, sk[5], goredis.Z{Score: float64(w.stamp), Member: c}, goredis.Z{Score: float64(w.stamp), Member: o})
			p.ZAdd(ctx, sk[3], goredis.Z{Member: ref})
			p.HSet(ctx, sk[4], "r"+c, "c"+ref, ref, o[16:], "r"+o, "a"+ref)
		}
		return nil
	})
	if err == nil {
		runcore.Saved(r, d)
	}
	return err
}

// rawSameWrites is go-redis making, for each batch of BenchmarkAppend,
// the durable writes the store's commit makes, in one MULTI/EXEC (one
// round trip): the items' members (ZADD), the write stamp (INCR) and the
// items' stamps (ZADD, scored by a count the driver keeps), the call's
// member of the calls set (ZADD) and the outputs hash's three fields
// (HSET), of the store's sizes, under keys named after key. What the
// store adds to these is its checks (the run's place, one ZLEXCOUNT) and
// the script that makes them.
func rawSameWrites(b *testing.B, client goredis.UniversalClient, key string) {
	write := sameWriter(client, key)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		sinkErr = write(i)
		i++
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
}

// sameWriter returns rawSameWrites' commit of sessiontest.Batch(i).
func sameWriter(client goredis.UniversalClient, key string) func(i int64) error {
	ctx := context.Background()
	return func(i int64) error {
		its := sessiontest.Batch(i)
		const place = "0000000000000001"
		pos := make([]string, len(its))
		members := make([]goredis.Z, len(its))
		stamps := make([]goredis.Z, len(its))
		for j, it := range its {
			pos[j] = place + fmt.Sprintf("%016x", it.Seq())
			members[j] = goredis.Z{Member: pos[j] + it.Kind().String() + it.Name() + string(it.Raw())}
			stamps[j] = goredis.Z{Score: float64(i + 1), Member: pos[j]}
		}
		id := its[0].CallID()
		ref := place + fmt.Sprintf("%08x", len(id)) + id + pos[0][16:]
		_, err := client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.ZAdd(ctx, key+":items", members...)
			p.Incr(ctx, key+":stamp")
			p.ZAdd(ctx, key+":stamps", stamps...)
			p.ZAdd(ctx, key+":calls", goredis.Z{Member: ref})
			p.HSet(ctx, key+":outputs", "r"+pos[0], "c"+ref, ref, pos[1][16:], "r"+pos[1], "a"+ref)
			return nil
		})
		return err
	}
}

// BenchmarkAppendPaired times the Store's commit and raw-same-writes'
// (see BenchmarkAppend), one after the other in each
// iteration (sessiontest.AppendPaired), and reports their ratio.
func BenchmarkAppendPaired(b *testing.B) {
	client, prefix := testClient(b)
	s := redis.New(client, redis.WithPrefix(prefix))
	sessiontest.AppendPaired(b, s, benchSession(), sameWriter(client, prefix+benchSession()))
}
