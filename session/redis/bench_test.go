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
