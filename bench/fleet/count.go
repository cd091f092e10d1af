package fleet

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Counters are what a worker process counts of its store traffic.
type Counters struct {
	// Calls are the calls of the store's API (List, Append, Save,
	// SaveAppend, Load, ...), whatever they cost on the wire.
	Calls int64 `json:"calls"`
	// RoundTrips are the requests the client sent and waited for: pgx
	// queries and execs (BEGIN and COMMIT included) on PostgreSQL, commands
	// and pipelines sent to each node on Redis. Zero on SQLite, which has
	// no wire.
	RoundTrips int64 `json:"round_trips"`
	// Bytes is the payload written: each save's delta (the run's head, the
	// items recorded since the last save, the context once a run) and each
	// appended item's JSON.
	Bytes int64 `json:"bytes"`
	// QueueRoundTrips are the queries River sent in River mode
	// ([Config.River]), apart from the store's: fetching and completing
	// jobs, inserting the sessions' next runs, its leader election and
	// maintenance. Zero otherwise.
	QueueRoundTrips int64 `json:"queue_round_trips"`
}

func (c *Counters) sub(d Counters) Counters {
	return Counters{Calls: c.Calls - d.Calls, RoundTrips: c.RoundTrips - d.RoundTrips, Bytes: c.Bytes - d.Bytes,
		QueueRoundTrips: c.QueueRoundTrips - d.QueueRoundTrips}
}

// counters holds the live counts, updated atomically.
type counters struct{ calls, roundTrips, bytes, queueRoundTrips atomic.Int64 }

func (c *counters) snapshot() Counters {
	return Counters{Calls: c.calls.Load(), RoundTrips: c.roundTrips.Load(), Bytes: c.bytes.Load(),
		QueueRoundTrips: c.queueRoundTrips.Load()}
}

// A Store is a backend's store: sessions and checkpoints in one place, with
// the save and the append of a commit in one call.
type Store interface {
	session.Store
	state.Store
	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
}

// countingStore counts the calls of its API and the payload bytes they
// write. It is one value for both roles, so that the checkpointer still
// sees one store and saves and appends in one SaveAppend.
type countingStore struct {
	Store
	c *counters
}

func (s *countingStore) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	s.c.calls.Add(1)
	return s.Store.List(ctx, sessionID, limit)
}

func (s *countingStore) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	s.c.calls.Add(1)
	return s.Store.ListBefore(ctx, sessionID, runID, q)
}

func (s *countingStore) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.c.calls.Add(1)
	s.c.bytes.Add(itemBytes(items))
	return s.Store.Append(ctx, sessionID, runID, items)
}

func (s *countingStore) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	s.c.calls.Add(1)
	return s.Store.Lookup(ctx, sessionID, runID, seq)
}

func (s *countingStore) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	s.c.calls.Add(1)
	return s.Store.Pop(ctx, sessionID)
}

func (s *countingStore) Load(ctx context.Context, runID string) (*state.Run, error) {
	s.c.calls.Add(1)
	return s.Store.Load(ctx, runID)
}

func (s *countingStore) Save(ctx context.Context, run *state.Run) error {
	s.c.calls.Add(1)
	s.c.bytes.Add(deltaBytes(run))
	return s.Store.Save(ctx, run)
}

func (s *countingStore) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	s.c.calls.Add(1)
	s.c.bytes.Add(deltaBytes(run) + itemBytes(items))
	return s.Store.SaveAppend(ctx, run, sessionID, items)
}

func (s *countingStore) Delete(ctx context.Context, runID string) error {
	s.c.calls.Add(1)
	return s.Store.Delete(ctx, runID)
}

// deltaBytes returns the size of what saving run writes now.
func deltaBytes(run *state.Run) int64 {
	d, err := run.Delta()
	if err != nil {
		return 0 // the save reports it
	}
	n := len(d.Head) + len(d.Context)
	for _, p := range d.Items {
		n += len(p.Data)
	}
	return int64(n)
}

func itemBytes(items []state.Item) int64 {
	var n int64
	var buf []byte
	for _, it := range items {
		buf = it.AppendRaw(buf[:0])
		n += int64(len(buf))
	}
	return n
}

// pgTracer counts pgx round trips: every query and exec (BEGIN and COMMIT
// are execs), and every batch as one, in n.
type pgTracer struct{ n *atomic.Int64 }

var (
	_ pgx.QueryTracer = pgTracer{}
	_ pgx.BatchTracer = pgTracer{}
)

func (t pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (pgTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t pgTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (pgTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (pgTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// redisHook counts what a Redis node client sends: each command, and each
// pipeline (a MULTI/EXEC block too) as one round trip.
type redisHook struct{ c *counters }

var _ goredis.Hook = redisHook{}

func (redisHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h redisHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.c.roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.c.roundTrips.Add(1)
		return next(ctx, cmds)
	}
}
