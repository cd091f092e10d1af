package redis_test

import (
	"context"
	"fmt"
	"strconv"
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
// three members with one ZADD on the same server, in the same run.
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

// BenchmarkToolTurn makes the durable writes of a crash-safe tool turn
// through the store, one turn an iteration: the save before the tool
// (the run with the call's response recorded) and the commit (SaveAppend:
// the next save, with the call and its output appended to the session),
// in runs of 64 turns from a session of 10 items of history, as
// turnbench's crash-safe rows make them; between runs, untimed, the
// session is cleared and its history appended again. Run it against a
// server of its own to read the server's work per turn (INFO
// commandstats, or callgrind).
func BenchmarkToolTurn(b *testing.B) {
	ctx := context.Background()
	client, prefix := testClient(b)
	s := redis.New(client, redis.WithPrefix(prefix))
	sid := benchSession()
	const perRun = 64
	var r *state.Run
	turn := perRun
	b.ReportAllocs()
	for b.Loop() {
		if turn == perRun {
			b.StopTimer()
			must(b, s.Clear(ctx, sid))
			must(b, s.Append(ctx, sid, "history", history(10)))
			r = state.NewRun(newRunID(), "assistant")
			runcore.SetSessionID(r, sid)
			must(b, s.Save(ctx, r))
			turn = 0
			b.StartTimer()
		}
		turn++
		first := runcore.Reserve(r, 2)
		id := fmt.Sprintf("call_%d", turn)
		call := state.ToolCall("fc_"+id, id, "lookup", `{"q":"weather in Paris"}`).WithSeq(first)
		must(b, runcore.Record(r, call))
		runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
		runcore.SetTurn(r, turn)
		must(b, s.Save(ctx, r))
		output := state.ToolOutput(id, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(first + 1)
		must(b, runcore.Record(r, output))
		sinkErr = s.SaveAppend(ctx, r, sid, []state.Item{call, output})
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
}
