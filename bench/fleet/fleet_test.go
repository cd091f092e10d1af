package fleet_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/bench/fleet"
	"github.com/turnkit/turnkit/internal/testenv"
)

// TestMain runs the test binary as a worker process when a simulation
// starts one.
func TestMain(m *testing.M) {
	fleet.ChildMain()
	os.Exit(m.Run())
}

// backend returns the named backend for a test, its server found in the
// environment: without it the subtest is skipped, or fails under CI=true
// or TURNKIT_REQUIRE_BACKENDS=1 (see testenv.ServerURL).
func backend(t *testing.T, name, schema string) fleet.Backend {
	t.Helper()
	switch name {
	case fleet.Postgres:
		return fleet.Backend{Name: name, PostgresURL: testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"), Schema: schema}
	case fleet.RedisCluster:
		addrs := testenv.ServerURL(t, "TURNKIT_REDIS_CLUSTER_ADDRS")
		return fleet.Backend{Name: name, ClusterAddrs: strings.Split(addrs, ","), Schema: schema}
	case fleet.Redis:
		return fleet.Backend{Name: name, RedisURL: testenv.ServerURL(t, "TURNKIT_REDIS_URL"), Schema: schema}
	}
	return fleet.Backend{Name: fleet.SQLite, Dir: t.TempDir()}
}

// TestSimulateSmoke runs a tiny simulation on each backend: SQLite, and
// PostgreSQL, the Redis Cluster and Redis when their environment
// variables are set (skipped without them, failed under CI=true): two
// worker processes, ten sessions, a second of measurement. Every run must
// end, with no failure.
func TestSimulateSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	launch, err := fleet.SelfLauncher("-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fleet.SQLite, fleet.Postgres, fleet.RedisCluster, fleet.Redis} {
		t.Run(name, func(t *testing.T) {
			be := backend(t, name, "fleet_smoke")
			res, err := fleet.Simulate(context.Background(), fleet.Config{
				Backend: be, Processes: 2, Sessions: 10, ToolTurns: 2,
				ModelLatency: 5 * time.Millisecond, Warmup: 200 * time.Millisecond, Duration: time.Second,
			}, launch)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.0f turns/s, %.0f runs/s, p50 %v, p99 %v, %.1f calls/turn, %.1f round trips/turn, %.0f B/turn, CPU µs/turn %.0f + %.0f, %d conflicts",
				be.Name, res.TurnsPerSecond(), res.RunsPerSecond(), res.P50, res.P99,
				res.PerTurn(res.Store.Calls), res.PerTurn(res.Store.RoundTrips), res.PerTurn(res.Store.Bytes),
				res.PerTurn(res.WorkerCPU.Microseconds()), res.PerTurn(res.ServerCPU.Microseconds()), res.Conflicts)
			if res.Failures > 0 {
				t.Fatalf("%d runs failed: %q", res.Failures, res.Errors)
			}
			if res.Runs == 0 || res.Turns < 2*res.Runs {
				t.Fatalf("%d runs, %d turns in the window: want runs of 3 turns (2 tool turns and a message)", res.Runs, res.Turns)
			}
			if res.P50 < 5*time.Millisecond {
				t.Errorf("p50 %v is below the model's latency", res.P50)
			}
			if res.Store.Calls == 0 || res.Store.Bytes == 0 {
				t.Errorf("store traffic not counted: %+v", res.Store)
			}
			if res.WorkerCPU == 0 {
				t.Error("worker CPU not measured")
			}
			if be.Name != fleet.SQLite && res.Store.RoundTrips == 0 {
				t.Errorf("round trips not counted: %+v", res.Store)
			}
		})
	}
}

// TestSimulateRiverSmoke runs a tiny simulation through River on
// PostgreSQL: the parent enqueues the sessions' first runs as riverrun
// jobs, two worker processes work them, and each run enqueues its
// session's next one. Every run must end, with no failure, and River's
// own queries must be counted. It needs TURNKIT_POSTGRES_URL (skipped
// without it, failed without it when CI=true).
func TestSimulateRiverSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	launch, err := fleet.SelfLauncher("-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	res, err := fleet.Simulate(context.Background(), fleet.Config{
		Backend: fleet.Backend{Name: fleet.Postgres, PostgresURL: url, Schema: "fleet_river_smoke"}, River: true,
		Processes: 2, Sessions: 10, ToolTurns: 2,
		ModelLatency: 5 * time.Millisecond, Warmup: 500 * time.Millisecond, Duration: 1500 * time.Millisecond,
	}, launch)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres through River: %.0f turns/s, %.0f runs/s, p50 %v, p99 %v, %.1f calls/turn, %.1f + %.1f (River) round trips/turn, %.0f B/turn, %d conflicts",
		res.TurnsPerSecond(), res.RunsPerSecond(), res.P50, res.P99, res.PerTurn(res.Store.Calls),
		res.PerTurn(res.Store.RoundTrips), res.PerTurn(res.Store.QueueRoundTrips), res.PerTurn(res.Store.Bytes), res.Conflicts)
	if res.Failures > 0 {
		t.Fatalf("%d runs failed: %q", res.Failures, res.Errors)
	}
	if res.Runs == 0 || res.Turns < 2*res.Runs {
		t.Fatalf("%d runs, %d turns in the window: want runs of 3 turns (2 tool turns and a message)", res.Runs, res.Turns)
	}
	if res.P50 < 5*time.Millisecond {
		t.Errorf("p50 %v is below the model's latency", res.P50)
	}
	if res.Store.Calls == 0 || res.Store.RoundTrips == 0 || res.Store.Bytes == 0 {
		t.Errorf("store traffic not counted: %+v", res.Store)
	}
	if res.Store.QueueRoundTrips == 0 {
		t.Errorf("River's queries not counted: %+v", res.Store)
	}
}
