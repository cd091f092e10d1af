package scenario

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// The growth scenarios measure what a long run and a long conversation
// cost as they grow, which a per-iteration benchmark cannot show: the cost
// of the first and the last turns of one run of many tool turns, and the
// cost of a message of one conversation at growing sizes of its history.
// They run outside testing.B (turnbench -growth), each once.

// GrowthChains returns the chains of the growth scenarios: "persistence"
// (persistence alone) and "checkpoint" (persistence over the
// checkpointer's session, then the checkpointer). Each call returns a new
// slice.
func GrowthChains() []string { return []string{persistenceAlone.String(), crashSafe.String()} }

// ConversationSizes returns the history sizes, in items, at which the
// conversation scenario measures messages: 100, 1 000, 10 000 and 100 000.
// Each call returns a new slice.
func ConversationSizes() []int { return []int{100, 1_000, 10_000, 100_000} }

// LongRunTurns is the length, in tool turns, of the long-run scenario's run.
const LongRunTurns = 10_000

// LongRunWindow is how many turns at each end of the long run are averaged.
const LongRunWindow = 100

// A LongRun is the result of one long run.
type LongRun struct {
	Backend, Chain string
	Turns          int
	// First and Last are the median time of a turn among the first and
	// the last LongRunWindow turns (the median, as on a shared machine a
	// burst of load moves a mean); FirstMean and LastMean are their means.
	First, Last         time.Duration
	FirstMean, LastMean time.Duration
	// Total is the whole run's time.
	Total time.Duration
}

// Ratio returns Last ÷ First.
func (r LongRun) Ratio() float64 { return float64(r.Last) / float64(r.First) }

// RunLong runs one run of turns tool turns (then a reply) with chain
// ("persistence" or "checkpoint") on backend, on an empty session, and
// returns the cost of its first and last LongRunWindow turns. A turn's time is the time
// between two model calls: the whole cycle of the tool call, its output,
// the appends and saves, and the next model input.
func RunLong(ctx context.Context, backend, chain string, turns int) (LongRun, error) {
	g, err := openGrowth(ctx, backend, chain, ConversationOptions{})
	if err != nil {
		return LongRun{}, err
	}
	defer g.close()
	stamps := make([]time.Time, 0, turns+2)
	inner := turnsModel(turns)
	agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{trivialTool()},
		Model: pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			stamps = append(stamps, time.Now())
			return inner.Respond(ctx, c)
		})}
	run := state.NewRun("long-"+chain, "bench")
	runcore.SetSessionID(run, g.sessionID)
	if turns > LongRunTurns {
		g.runner = pipeline.NewRunner(pipeline.WithMiddleware(g.mws...), pipeline.WithMaxTurns(turns+2))
	}
	t0 := time.Now()
	if _, err := g.runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run)); err != nil {
		return LongRun{}, fmt.Errorf("long run on %s with %s: %w", backend, chain, err)
	}
	total := time.Since(t0)
	if len(stamps) < turns+1 {
		return LongRun{}, fmt.Errorf("long run on %s with %s: %d model calls, want %d", backend, chain, len(stamps), turns+1)
	}
	// Turn k (from 0) is the time from model call k to model call k+1.
	w := min(LongRunWindow, turns/2)
	window := func(from int) (median, mean time.Duration) {
		d := make([]time.Duration, w)
		for i := range d {
			d[i] = stamps[from+i+1].Sub(stamps[from+i])
		}
		slices.Sort(d)
		return d[w/2], stamps[from+w].Sub(stamps[from]) / time.Duration(w)
	}
	r := LongRun{Backend: backend, Chain: chain, Turns: turns, Total: total}
	r.First, r.FirstMean = window(0)
	r.Last, r.LastMean = window(turns - w)
	return r, nil
}

// A Message is the cost of the messages of a conversation measured at one
// size of its history: each message is one short run (the user's message,
// one tool call, a reply) over the whole history, read by persistence as
// in production.
type Message struct {
	Backend, Chain string
	// History is the number of items in the session before the messages.
	History int
	// Messages is how many messages were measured.
	Messages int
	// Time is the median time of a message.
	Time time.Duration
	// Written is the mean number of bytes a message made the stores write:
	// the JSON of the items appended to the session, and the heads,
	// contexts and items of the checkpoint saves.
	Written float64
	// StoredGrowth is the mean growth of Stored per message.
	StoredGrowth float64
	// Stored is the size of everything the backend holds after the
	// messages: the SQLite file, the PostgreSQL tables with their indexes
	// and TOAST, the Redis keys' MEMORY USAGE, and for memory the bytes of
	// the items and checkpoint pieces it keeps.
	Stored int64
	// Decoded is the mean number of items a message read from the session
	// store (every item List returns is decoded from its stored form).
	Decoded float64
	// ModelBytes is the mean number of bytes of JSON a message sent to the
	// model: its model calls' input items (with ConversationOptions.OpenAI,
	// the request bodies).
	ModelBytes float64
	// CallBytes and MaxCallBytes are the mean and the largest number of
	// bytes one model call sent; Calls is the number of model calls.
	CallBytes    float64
	MaxCallBytes int64
	Calls        int
}

// Conversation measures messages of one conversation with chain on
// backend at each history size of sizes (ascending): it grows the session
// to the size with a bulk append of made-up rounds (1 000 items per
// append, as one run per append: no model), then runs messages messages
// and measures each. progress, if not nil, gets a line per size.
func Conversation(ctx context.Context, backend, chain string, sizes []int, messages int, opts ConversationOptions, progress io.Writer) ([]Message, error) {
	g, err := openGrowth(ctx, backend, chain, opts)
	if err != nil {
		return nil, err
	}
	defer g.close()
	var calls []int64 // the bytes of each model call since the last reset
	inner := messageModel()
	var buf []byte
	agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{trivialTool()},
		Model: pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			n := int64(2) // [ and ]
			for i, it := range c.Input.All() {
				buf = it.AppendRaw(buf[:0])
				n += int64(len(buf))
				if i > 0 {
					n++ // ,
				}
			}
			calls = append(calls, n)
			return inner.Respond(ctx, c)
		})}
	var runOpts []pipeline.RunOption
	wire := &fakeResponses{}
	if opts.OpenAI || opts.Chain {
		agent.Model = wireModel(wire)
	}
	if opts.Chain {
		runOpts = append(runOpts, openai.ChainResponses())
	}
	take := func() []int64 {
		if opts.OpenAI || opts.Chain {
			return wire.take()
		}
		out := calls
		calls = nil
		return out
	}
	have, msg := 0, 0
	var out []Message
	for _, size := range sizes {
		if err := g.grow(ctx, &have, size); err != nil {
			return out, err
		}
		before, err := g.stored(ctx)
		if err != nil {
			return out, err
		}
		message := func() (time.Duration, error) {
			msg++
			g.clock.messages.Add(1)
			run := state.NewRun("msg-"+strconv.Itoa(msg), "bench")
			runcore.SetSessionID(run, g.sessionID)
			t0 := time.Now()
			if _, err := g.runner.Run(ctx, agent, pipeline.UserInput("question "+strconv.Itoa(msg)), append(runOpts, pipeline.WithState(run))...); err != nil {
				return 0, fmt.Errorf("message %d on %s with %s: %w", msg, backend, chain, err)
			}
			have += run.Len()
			return time.Since(t0), nil
		}
		// The history grown in bulk, which no message read: one message,
		// not measured, reads it whole, as a process's first message of
		// the session does, and fills persistence's history cache (with
		// chaining or compaction it compacts it and leaves the marks the
		// next messages continue from). The messages measured are a
		// conversation going on.
		if _, err := message(); err != nil {
			return out, err
		}
		g.count.reset()
		take()
		times := make([]time.Duration, 0, messages)
		for range messages {
			d, err := message()
			if err != nil {
				return out, err
			}
			times = append(times, d)
		}
		sent := take()
		var modelBytes, maxCall int64
		for _, n := range sent {
			modelBytes += n
			maxCall = max(maxCall, n)
		}
		after, err := g.stored(ctx)
		if err != nil {
			return out, err
		}
		slices.Sort(times)
		m := float64(messages)
		written, decoded := g.count.totals()
		x := Message{Backend: backend, Chain: chain, History: size, Messages: messages,
			Time: times[len(times)/2], Written: float64(written) / m, StoredGrowth: float64(after-before) / m,
			Stored: after, Decoded: float64(decoded) / m, ModelBytes: float64(modelBytes) / m,
			Calls: len(sent), MaxCallBytes: maxCall}
		if len(sent) > 0 {
			x.CallBytes = float64(modelBytes) / float64(len(sent))
		}
		out = append(out, x)
		if progress != nil {
			fmt.Fprintf(progress, "conversation/%s/%s/history=%d: %s/message, %.0f B written, %.0f decoded, %.0f B to the model (%.0f B per call, %d B at most), %d B stored\n",
				backend, chain, size, x.Time.Round(time.Microsecond), x.Written, x.Decoded, x.ModelBytes, x.CallBytes, x.MaxCallBytes, x.Stored)
		}
	}
	return out, nil
}

// messageModel answers each message as the conversation's messages go:
// a call of the tool, then, once its output is in, a reply. (One model
// over all the messages: a script by call number would call the tool in
// the first message only.)
func messageModel() pipeline.Model {
	call := scripted.Generate(func(int) scripted.Step { return callStep })
	reply := scripted.Generate(func(int) scripted.Step { return replyStep })
	return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if n := c.Input.Len(); n > 0 && c.Input.At(n-1).Kind().IsOutput() {
			return reply.Respond(ctx, c)
		}
		return call.Respond(ctx, c)
	})
}

// growthBackend is one backend opened for a growth scenario with its
// chain: the runner, the counting store, and what measures its size.
type growthBackend struct {
	sessionID string
	sess      session.Store // the backend's session store
	count     *countingStore
	mws       []pipeline.Middleware
	runner    *pipeline.Runner
	stored    func(context.Context) (int64, error)
	close     func()
	clock     messageClock
}

// MessageEvery is how far the clock of ConversationOptions.KeepFor moves
// per message: a conversation of one message a minute.
const MessageEvery = time.Minute

// messageClock is a clock that moves MessageEvery per message.
type messageClock struct{ messages atomic.Int64 }

func (c *messageClock) now() time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(c.messages.Load()) * MessageEvery)
}

// openGrowth opens backend for chain on a fresh session (a schema, a key
// prefix or a file of its own).
// ConversationOptions are what a conversation's chain is configured with
// beyond its backend.
type ConversationOptions struct {
	// View is the persistence middleware's WithLimit: the last View items
	// of the session are the model's view (0: the whole session).
	View int
	// ByReference makes checkpoints refer to the session history instead
	// of copying it (the library's default); false copies it
	// (persistence.WithHistoryCopied).
	ByReference bool
	// DeleteFinished sets the checkpointer's retention to
	// checkpoint.DeleteFinished.
	DeleteFinished bool
	// KeepLast, if positive, sets the checkpointer's retention to
	// checkpoint.KeepLast(KeepLast).
	KeepLast int
	// KeepFor, if positive, sets the checkpointer's retention to
	// checkpoint.KeepFor(KeepFor), on a clock that moves MessageEvery per
	// message (checkpoint.WithClock).
	KeepFor time.Duration
	// OpenAI makes the agent's model the Responses adapter over an
	// in-process fake of the API; the bytes sent to the model are then
	// the request bodies (input, instructions, tools, settings).
	OpenAI bool
	// Chain chains each run's calls on the server and continues the last
	// response across runs (openai.ChainResponses and
	// persistence.WithContinuation); it implies OpenAI.
	Chain bool
	// Compact bounds the model's view at Compact estimated tokens with the
	// compaction middleware and a summary (and persistence's
	// WithContinuation, so that a run reads from the boundary); 0: none.
	Compact int
}

// continued reports whether the conversation records where it stands.
func (o ConversationOptions) continued() bool { return o.Chain || o.Compact > 0 }

func openGrowth(ctx context.Context, backend, chain string, opts ConversationOptions) (*growthBackend, error) {
	g := &growthBackend{sessionID: "growth-" + chain}
	var st state.Store
	switch backend {
	case "memory":
		s := memory.New()
		g.sess, st, g.close = s, memstore.New(), func() { s.Close() }
	case "sqlite":
		dir, err := os.MkdirTemp("", "turnbench-growth-")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "growth.db")
		s, err := sqlite.Open(path)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		g.sess, st, g.close = s, s, func() { s.Close(); os.RemoveAll(dir) }
		g.stored = func(ctx context.Context) (int64, error) { return sqliteSize(ctx, path) }
	case "sqlite-sealed":
		dir, err := os.MkdirTemp("", "turnbench-growth-sealed-")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "growth.db")
		kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("bench"))
		db, err := sqlite.Open(path, sqlite.WithCodec(kr.Codec()), sqlite.WithItemCodec(kr))
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s := encrypt.Wrap(db, kr)
		g.sess, st, g.close = s, s, func() { s.Close(); os.RemoveAll(dir) }
		g.stored = func(ctx context.Context) (int64, error) { return sqliteSize(ctx, path) }
	case "postgres":
		url := os.Getenv("TURNKIT_POSTGRES_URL")
		if url == "" {
			return nil, errors.New("TURNKIT_POSTGRES_URL is not set")
		}
		schema := "turnbench_growth_" + chain
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, err
		}
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			pool.Close()
			return nil, err
		}
		s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
		if err != nil {
			pool.Close()
			return nil, err
		}
		g.sess, st, g.close = s, s, func() { s.Close(); pool.Close() }
		g.stored = func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n)
			return n, err
		}
	case "redis":
		url := os.Getenv("TURNKIT_REDIS_URL")
		if url == "" {
			return nil, errors.New("TURNKIT_REDIS_URL is not set")
		}
		prefix := "turnbench-growth-" + chain + ":"
		opt, err := goredis.ParseURL(url)
		if err != nil {
			return nil, err
		}
		rc := goredis.NewClient(opt)
		if err := redisDelete(ctx, rc, prefix); err != nil {
			rc.Close()
			return nil, err
		}
		s, err := redis.Open(ctx, url, redis.WithPrefix(prefix))
		if err != nil {
			rc.Close()
			return nil, err
		}
		g.sess, st, g.close = s, s, func() { s.Close(); _ = redisDelete(context.Background(), rc, prefix); rc.Close() }
		g.stored = func(ctx context.Context) (int64, error) { return redisSize(ctx, rc, prefix) }
	default:
		return nil, fmt.Errorf("unknown backend %q", backend)
	}
	g.count = newCountingStore(g.sess, st)
	if g.stored == nil {
		g.stored = func(context.Context) (int64, error) { return g.count.held(), nil }
	}
	var mws []pipeline.Middleware
	var popts []persistence.Option
	if opts.View > 0 {
		popts = append(popts, persistence.WithLimit(opts.View))
	}
	if !opts.ByReference {
		popts = append(popts, persistence.WithHistoryCopied())
	}
	if opts.continued() {
		popts = append(popts, persistence.WithContinuation())
	}
	var inner []pipeline.Middleware
	if opts.Compact > 0 {
		inner = append(inner, compactionMiddleware(opts.Compact))
	}
	switch chain {
	case persistenceAlone.String():
		mws = append([]pipeline.Middleware{persistence.Middleware(g.count.session(), popts...)}, inner...)
	case crashSafe.String():
		var copts []checkpoint.Option
		switch {
		case opts.DeleteFinished:
			copts = append(copts, checkpoint.WithRetention(checkpoint.DeleteFinished))
		case opts.KeepLast > 0:
			copts = append(copts, checkpoint.WithRetention(checkpoint.KeepLast(opts.KeepLast)))
		case opts.KeepFor > 0:
			copts = append(copts, checkpoint.WithRetention(checkpoint.KeepFor(opts.KeepFor)), checkpoint.WithClock(g.clock.now))
		}
		copts = append(copts, checkpoint.WithSession(g.count.session(), popts...))
		cp := checkpoint.New(g.count.state(), copts...)
		mws = append([]pipeline.Middleware{cp.Middleware()}, inner...)
	default:
		g.close()
		return nil, fmt.Errorf("unknown chain %q", chain)
	}
	g.mws = mws
	g.runner = pipeline.NewRunner(pipeline.WithMiddleware(mws...), pipeline.WithMaxTurns(LongRunTurns+2))
	if err := g.sess.Clear(ctx, g.sessionID); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// grow appends made-up rounds to the session until it holds size items
// (*have counts them), 1 000 items per append, through the backend's own
// store: not checkpointed, and not counted as written, but held.
func (g *growthBackend) grow(ctx context.Context, have *int, size int) error {
	for *have < size {
		n := min(1000, size-*have)
		items := makeHistory(n)
		if err := g.sess.Append(ctx, g.sessionID, "history-"+strconv.Itoa(*have), items); err != nil {
			return fmt.Errorf("grow the history to %d items: %w", size, err)
		}
		g.count.hold(items)
		*have += n
	}
	return nil
}

// sqliteSize returns the size of the SQLite database at path, its
// write-ahead log checkpointed into it first.
func sqliteSize(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return 0, err
	}
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n, nil
}

// redisKeys calls fn with the keys under prefix, a batch at a time.
func redisKeys(ctx context.Context, rc *goredis.Client, prefix string, fn func([]string) error) error {
	var cursor uint64
	for {
		keys, next, err := rc.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func redisDelete(ctx context.Context, rc *goredis.Client, prefix string) error {
	return redisKeys(ctx, rc, prefix, func(keys []string) error { return rc.Del(ctx, keys...).Err() })
}

// redisSize returns the sum of MEMORY USAGE (all samples) of the keys
// under prefix.
func redisSize(ctx context.Context, rc *goredis.Client, prefix string) (int64, error) {
	var n int64
	err := redisKeys(ctx, rc, prefix, func(keys []string) error {
		cmds, err := rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys {
				p.MemoryUsage(ctx, k, 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range cmds {
			n += c.(*goredis.IntCmd).Val()
		}
		return nil
	})
	return n, err
}

// A countingStore counts what a chain makes its stores write and read:
// the bytes of the items appended and of the checkpoint pieces saved, and
// the items List returns (each decoded from its stored form). It also
// keeps the size of what a memory backend holds. It serves as both the
// session store and the state store, and offers SaveAppend (one
// transaction for both, see checkpoint.Session) exactly when the backend
// does.
type countingStore struct {
	sess session.Store
	st   state.Store

	mu                sync.Mutex
	written, decoded  int64
	items, ckptPieces int64
	pieces            map[string]map[string]int64 // run → piece → size, for held
}

func newCountingStore(sess session.Store, st state.Store) *countingStore {
	return &countingStore{sess: sess, st: st, pieces: map[string]map[string]int64{}}
}

func (c *countingStore) reset() {
	c.mu.Lock()
	c.written, c.decoded = 0, 0
	c.mu.Unlock()
}

func (c *countingStore) totals() (written, decoded int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.decoded
}

// held returns the bytes of the items and checkpoint pieces stored.
func (c *countingStore) held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items + c.ckptPieces
}

// session returns the counting session store; state, the counting state
// store. When the backend keeps both in one store with SaveAppend, they
// are one value with SaveAppend, so that checkpoint.Session uses it.
func (c *countingStore) session() session.Store {
	if _, ok := c.sess.(interface {
		SaveAppend(context.Context, *state.Run, string, []state.Item) error
	}); ok && any(c.sess) == any(c.st) {
		return (*countingAtomic)(c)
	}
	return (*countingSession)(c)
}

func (c *countingStore) state() state.Store {
	if s, ok := c.session().(*countingAtomic); ok {
		return s
	}
	return (*countingState)(c)
}

// hold adds items appended behind the counters to what the backend holds.
func (c *countingStore) hold(items []state.Item) {
	var n int64
	for _, it := range items {
		n += int64(len(it.AppendRaw(nil)))
	}
	c.mu.Lock()
	c.items += n
	c.mu.Unlock()
}

func (c *countingStore) addItems(items []state.Item) {
	var n int64
	for _, it := range items {
		n += int64(len(it.AppendRaw(nil)))
	}
	c.mu.Lock()
	c.written += n
	c.items += n
	c.mu.Unlock()
}

func (c *countingStore) addDelta(run *state.Run) {
	d, err := run.Delta()
	if err != nil {
		return // the store's own Delta reports it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.pieces[d.RunID]
	if held == nil {
		held = map[string]int64{}
		c.pieces[d.RunID] = held
	}
	set := func(key string, n int64) {
		c.written += n
		c.ckptPieces += n - held[key]
		held[key] = n
	}
	set("head", int64(len(d.Head)))
	if d.Context != nil {
		set("context", int64(len(d.Context)))
	}
	for _, p := range d.Items {
		set(strconv.FormatInt(p.Seq, 10), int64(len(p.Data)))
	}
}

// drop takes a deleted checkpoint's pieces out of what the backend holds.
func (c *countingStore) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.pieces[runID] {
		c.ckptPieces -= n
	}
	delete(c.pieces, runID)
}

// listRuns lists the backend's runs (state.Lister), which the retentions
// that keep some finished runs read.
func (c *countingStore) listRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	l, ok := c.st.(state.Lister)
	if !ok {
		return state.RunPage{}, fmt.Errorf("scenario: the state store %T lists no runs", c.st)
	}
	return l.ListRuns(ctx, q)
}

// countingSession is the session store of a countingStore.
type countingSession countingStore

func (s *countingSession) c() *countingStore { return (*countingStore)(s) }

func (s *countingSession) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	items, err := s.sess.List(ctx, sessionID, limit)
	s.mu.Lock()
	s.decoded += int64(len(items))
	s.mu.Unlock()
	return items, err
}

func (s *countingSession) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	h, err := s.sess.ListBefore(ctx, sessionID, runID, q)
	s.mu.Lock()
	s.decoded += int64(len(h.Items))
	s.mu.Unlock()
	return h, err
}

// ReadChanges reads what a session gained from the backend (every
// backend reads changes: see session.ChangeReader), counting the items
// returned as decoded; persistence's history cache reads through it.
func (s *countingSession) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	r, ok := s.sess.(session.ChangeReader)
	if !ok {
		return session.Changes{}, fmt.Errorf("scenario: the session store %T reads no changes", s.sess)
	}
	ch, err := r.ReadChanges(ctx, sessionID, q)
	s.mu.Lock()
	s.decoded += int64(len(ch.Items))
	s.mu.Unlock()
	return ch, err
}

func (s *countingSession) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	err := s.sess.Append(ctx, sessionID, runID, items)
	if err == nil {
		s.c().addItems(items)
	}
	return err
}

func (s *countingSession) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	it, ok, err := s.sess.Lookup(ctx, sessionID, runID, seq)
	if ok {
		s.mu.Lock()
		s.decoded++
		s.mu.Unlock()
	}
	return it, ok, err
}

func (s *countingSession) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	return s.sess.Pop(ctx, sessionID)
}

func (s *countingSession) Clear(ctx context.Context, sessionID string) error {
	return s.sess.Clear(ctx, sessionID)
}

func (s *countingSession) Close() error { return s.sess.Close() }

// countingState is the state store of a countingStore.
type countingState countingStore

func (s *countingState) Load(ctx context.Context, runID string) (*state.Run, error) {
	return s.st.Load(ctx, runID)
}

func (s *countingState) Save(ctx context.Context, run *state.Run) error {
	(*countingStore)(s).addDelta(run)
	return s.st.Save(ctx, run)
}

func (s *countingState) Delete(ctx context.Context, runID string) error {
	err := s.st.Delete(ctx, runID)
	if err == nil {
		(*countingStore)(s).drop(runID)
	}
	return err
}

// ListRuns lists the backend's runs.
func (s *countingState) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	return (*countingStore)(s).listRuns(ctx, q)
}

// countingAtomic is both stores of a countingStore over a backend that
// keeps both in one store.
type countingAtomic countingStore

func (s *countingAtomic) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	return (*countingSession)(s).List(ctx, sessionID, limit)
}

func (s *countingAtomic) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	return (*countingSession)(s).ListBefore(ctx, sessionID, runID, q)
}

func (s *countingAtomic) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	return (*countingSession)(s).ReadChanges(ctx, sessionID, q)
}

func (s *countingAtomic) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	return (*countingSession)(s).Append(ctx, sessionID, runID, items)
}

func (s *countingAtomic) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	return (*countingSession)(s).Lookup(ctx, sessionID, runID, seq)
}

func (s *countingAtomic) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	return s.sess.Pop(ctx, sessionID)
}

func (s *countingAtomic) Clear(ctx context.Context, sessionID string) error {
	return s.sess.Clear(ctx, sessionID)
}

func (s *countingAtomic) Close() error { return s.sess.Close() }

func (s *countingAtomic) Load(ctx context.Context, runID string) (*state.Run, error) {
	return s.st.Load(ctx, runID)
}

func (s *countingAtomic) Save(ctx context.Context, run *state.Run) error {
	return (*countingState)(s).Save(ctx, run)
}

func (s *countingAtomic) Delete(ctx context.Context, runID string) error {
	return (*countingState)(s).Delete(ctx, runID)
}

// ListRuns lists the backend's runs.
func (s *countingAtomic) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	return (*countingStore)(s).listRuns(ctx, q)
}

// SaveAppend saves and appends in one transaction of the backend.
func (s *countingAtomic) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	c := (*countingStore)(s)
	c.addDelta(run)
	err := s.sess.(interface {
		SaveAppend(context.Context, *state.Run, string, []state.Item) error
	}).SaveAppend(ctx, run, sessionID, items)
	if err == nil {
		c.addItems(items)
	}
	return err
}
