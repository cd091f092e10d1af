package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.ServerURL(t, "TURNKIT_REDIS_URL")
}

// testClient returns a client and a fresh key prefix, deleting the prefix's
// keys and closing the client when the test ends.
func testClient(t testing.TB) (*goredis.Client, string) {
	t.Helper()
	o, err := goredis.ParseURL(serverURL(t))
	if err != nil {
		t.Fatalf("ParseURL = %v", err)
	}
	client := goredis.NewClient(o)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "turnkit_test_" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("scan %s*: %v", prefix, err)
		}
		for _, k := range keys {
			if err := client.Del(ctx, k).Err(); err != nil {
				t.Errorf("del %s: %v", k, err)
			}
		}
		client.Close()
	})
	return client, prefix
}

func TestConformance(t *testing.T) {
	client, prefix := testClient(t)
	sessiontest.TestStore(t, func(t *testing.T) session.Store {
		s := redis.New(client, redis.WithPrefix(prefix))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestCheckpointConformance(t *testing.T) {
	client, prefix := testClient(t)
	statetest.TestStore(t, func(t *testing.T) state.Store {
		s := redis.New(client, redis.WithPrefix(prefix))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestSignedCheckpoints(t *testing.T) {
	client, prefix := testClient(t)
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			s := redis.New(client, redis.WithPrefix(prefix), redis.WithCodec(m, u))
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		func(t *testing.T, runID string, edit func([]byte) []byte) {
			ctx := t.Context()
			key := prefix + "checkpoint:{" + runID + "}" // the layout of session/redis's checkpoint hash
			data, err := client.HGet(ctx, key, "d").Bytes()
			if err != nil {
				t.Fatalf("HGET %s d: %v", key, err)
			}
			if err := client.HSet(ctx, key, "d", edit(data)).Err(); err != nil {
				t.Fatalf("HSET %s d: %v", key, err)
			}
		})
}
