package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
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
	return testClientAt(t, serverURL(t))
}

// testClientAt is testClient on the server at url.
func testClientAt(t testing.TB, url string) (*goredis.Client, string) {
	t.Helper()
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("ParseURL = %v", err)
	}
	client := goredis.NewClient(o)
	prefix := newPrefix()
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

// testCluster returns a client of the Redis Cluster whose nodes
// TURNKIT_REDIS_CLUSTER_ADDRS lists (comma-separated host:port) and a
// fresh key prefix, deleting the prefix's keys on every master and closing
// the client when the test ends. Without the variable the test is skipped,
// or fails with CI=true or TURNKIT_REQUIRE_BACKENDS=1.
func testCluster(t testing.TB) (*goredis.ClusterClient, string) {
	t.Helper()
	addrs := strings.Split(testenv.ServerURL(t, "TURNKIT_REDIS_CLUSTER_ADDRS"), ",")
	client := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	if err := client.Ping(t.Context()).Err(); err != nil {
		client.Close()
		t.Fatalf("the Redis Cluster at %v does not answer: %v", addrs, err)
	}
	prefix := newPrefix()
	t.Cleanup(func() {
		ctx := context.Background()
		err := client.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
			iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				if err := node.Del(ctx, iter.Val()).Err(); err != nil {
					return err
				}
			}
			return iter.Err()
		})
		if err != nil {
			t.Errorf("delete %s*: %v", prefix, err)
		}
		client.Close()
	})
	return client, prefix
}

func newPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "turnkit_test_" + hex.EncodeToString(b) + ":"
}

// forEachServer runs fn as a subtest against the standalone server
// ("standalone") and against the cluster ("cluster"), each with a client
// and a fresh prefix; a missing server skips (or, in CI, fails) its
// subtest only.
func forEachServer(t *testing.T, fn func(t *testing.T, client goredis.UniversalClient, prefix string)) {
	t.Run("standalone", func(t *testing.T) {
		client, prefix := testClient(t)
		fn(t, client, prefix)
	})
	t.Run("cluster", func(t *testing.T) {
		client, prefix := testCluster(t)
		fn(t, client, prefix)
	})
}

// newStore returns a store over client, closed when the test ends.
func newStore(t *testing.T, client goredis.UniversalClient, opts ...redis.Option) *redis.Store {
	s := redis.New(client, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		sessiontest.TestStore(t, func(t *testing.T) session.Store {
			return newStore(t, client, redis.WithPrefix(prefix))
		})
	})
}

// TestCache runs the cache suite with two clients of one server (or
// cluster): two processes.
func TestCache(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		a, prefix := testClient(t)
		o, err := goredis.ParseURL(serverURL(t))
		if err != nil {
			t.Fatalf("ParseURL = %v", err)
		}
		b := goredis.NewClient(o)
		t.Cleanup(func() { _ = b.Close() })
		sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
			return newStore(t, a, redis.WithPrefix(prefix)), newStore(t, b, redis.WithPrefix(prefix))
		})
	})
	t.Run("cluster", func(t *testing.T) {
		a, prefix := testCluster(t)
		b := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(testenv.ServerURL(t, "TURNKIT_REDIS_CLUSTER_ADDRS"), ",")})
		t.Cleanup(func() { _ = b.Close() })
		sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
			return newStore(t, a, redis.WithPrefix(prefix)), newStore(t, b, redis.WithPrefix(prefix))
		})
	})
}

func TestCheckpointConformance(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		statetest.TestStore(t, func(t *testing.T) state.Store {
			return newStore(t, client, redis.WithPrefix(prefix))
		})
	})
}

func TestSignedCheckpoints(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		statetest.TestSignedStore(t,
			func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
				return newStore(t, client, redis.WithPrefix(prefix), redis.WithCodec(m, u))
			},
			func(t *testing.T, runID string, edit func([]byte) []byte) {
				ctx := t.Context()
				key := prefix + "checkpoint:{" + runID + "}" // the head hash of session/redis's checkpoints
				data, err := client.HGet(ctx, key, "d").Bytes()
				if err != nil {
					t.Fatalf("HGET %s d: %v", key, err)
				}
				if err := client.HSet(ctx, key, "d", edit(data)).Err(); err != nil {
					t.Fatalf("HSET %s d: %v", key, err)
				}
			})
	})
}
