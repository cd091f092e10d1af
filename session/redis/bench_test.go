package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
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
