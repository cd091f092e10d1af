package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/state"
)

// costBackend returns the named backend, its server found in the
// environment: without it the subtest is skipped, or fails under CI=true
// or TURNKIT_REQUIRE_BACKENDS=1 (see testenv.ServerURL).
func costBackend(t *testing.T, name string) Backend {
	t.Helper()
	switch name {
	case Postgres:
		return Backend{Name: name, PostgresURL: testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"), Schema: "fleet_cost"}
	case RedisCluster:
		addrs := testenv.ServerURL(t, "TURNKIT_REDIS_CLUSTER_ADDRS")
		return Backend{Name: name, ClusterAddrs: strings.Split(addrs, ","), Schema: "fleet_cost"}
	case Redis:
		return Backend{Name: name, RedisURL: testenv.ServerURL(t, "TURNKIT_REDIS_URL"), Schema: "fleet_cost"}
	}
	return Backend{Name: SQLite, Dir: t.TempDir()}
}

// TestOneRunCosts pins what one run of the default workload (4 tool turns
// and a final message) costs each backend, the counts docs/scale.md
// quotes: 12 store calls (a List and 11 writes), and 12 round trips on
// PostgreSQL (one a call), 12 on one Redis server, 29 on the Redis Cluster (in the
// cheapest of five runs: a run may also set the client up; 18 before the
// run index, whose update is a second script per save on the cluster). It logs
// where the bytes go (go test -v -run OneRunCosts ./bench/fleet).
func TestOneRunCosts(t *testing.T) {
	ctx := context.Background()
	backends := []struct {
		name       string
		roundTrips int64
	}{{SQLite, 0}, {Postgres, 12}, {RedisCluster, 29}, {Redis, 12}}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			be := costBackend(t, b.name)
			if err := be.reset(ctx); err != nil {
				t.Fatal(err)
			}
			defer be.reset(ctx)
			c := &counters{}
			st, err := be.open(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cfg := Config{Backend: be, Sessions: 1, ModelLatency: time.Microsecond}
			cfg.defaults()
			bd := &bytesByPart{Store: st}
			p := newProcess(cfg, 0, bd, c)
			p.from, p.to = time.Now(), time.Now().Add(time.Hour)
			least := int64(-1)
			for k := range 5 {
				before := c.snapshot()
				*bd = bytesByPart{Store: st}
				p.run(ctx, 0, k)
				if n := p.failures.Load(); n > 0 {
					t.Fatalf("run %d failed: %q", k, p.firstErrs)
				}
				d := c.snapshot()
				d = d.sub(before)
				t.Logf("run %d: %d calls, %d round trips, %d bytes: %d saves, heads %d, checkpoint items %d, context %d, session items %d",
					k, d.Calls, d.RoundTrips, d.Bytes, bd.saves, bd.head, bd.items, bd.context, bd.session)
				if d.Calls != 12 || bd.saves != 11 {
					t.Errorf("run %d: %d calls, %d saves; want 12 and 11", k, d.Calls, bd.saves)
				}
				if least < 0 || d.RoundTrips < least {
					least = d.RoundTrips
				}
			}
			// A run may also pay for the client's setup: the cluster's slot
			// map, a script's first load on a node (a run's keys land on
			// any node).
			if least != b.roundTrips {
				t.Errorf("%d round trips in the cheapest run, want %d", least, b.roundTrips)
			}
		})
	}
}

// bytesByPart adds up what each save writes, by part.
type bytesByPart struct {
	Store
	saves, head, items, context, session int
}

func (b *bytesByPart) add(run *state.Run, items []state.Item) {
	d, err := run.Delta()
	if err != nil {
		return
	}
	b.saves++
	b.head += len(d.Head)
	b.context += len(d.Context)
	for _, p := range d.Items {
		b.items += len(p.Data)
	}
	b.session += int(itemBytes(items))
}

func (b *bytesByPart) Save(ctx context.Context, run *state.Run) error {
	b.add(run, nil)
	return b.Store.Save(ctx, run)
}

func (b *bytesByPart) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	b.add(run, items)
	return b.Store.SaveAppend(ctx, run, sessionID, items)
}
