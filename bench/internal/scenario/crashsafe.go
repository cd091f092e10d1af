package scenario

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
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

// A backend is where a crash-safe scenario keeps sessions and checkpoints:
// open returns both (one store where the backend holds both, so the
// checkpointer saves and appends in one transaction) and a close func;
// skip says why it cannot run here. The settle func open returns, when
// not nil, is run with the timer stopped after the setup between two runs
// (the previous run's items popped): on SQLite it checkpoints the
// write-ahead log, so that the untimed Pops' log pages are not copied
// into the database by whichever timed append next reaches the
// autocheckpoint.
type backend struct {
	name string
	skip string
	open func(tb testing.TB) (sess session.Store, st state.Store, close, settle func())
}

// sqliteSettle returns a func that checkpoints the write-ahead log of the
// database at path, through a connection of its own.
func sqliteSettle(tb testing.TB, path string) func() {
	return func() {
		db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
		if err != nil {
			tb.Fatal(err)
		}
		defer db.Close()
		if err := truncateLog(context.Background(), db); err != nil {
			tb.Fatal(err)
		}
	}
}

// truncateLog checkpoints the write-ahead log of db's file into the
// database and empties it.
func truncateLog(ctx context.Context, db *sql.DB) error {
	var busy, logged, done int
	return db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done)
}

// BackendNames returns the names of the crash-safe scenarios' backends,
// in table order: "memory", "sqlite", "postgres", "redis". A scenario
// named crashsafe/NAME/... runs on backend NAME. Each call returns a new
// slice.
func BackendNames() []string {
	var out []string
	for _, be := range backends() {
		out = append(out, be.name)
	}
	return out
}

// backends returns the crash-safe scenarios' backends: memory, SQLite in a
// temporary file, and PostgreSQL and Redis when TURNKIT_POSTGRES_URL and
// TURNKIT_REDIS_URL point at servers.
//
// Each open starts the store afresh, as the raw drivers start theirs: SQLite
// in a new file, PostgreSQL in its schema made again (storeSchema),
// Redis with no key under its prefix (storePrefix). Kept from one open
// to the next, the PostgreSQL store's tables and indexes held the dead
// rows and pages of every earlier scenario's runs (the untimed pops
// between runs delete a run's items one by one, and each moves the
// session head's generation), and its turns slowed as they grew: five
// consecutive counts of 2 000 crash-safe turns at h = 10 took 309, 357,
// 393, 400 and 419 µs a turn on a schema that had served an afternoon of
// runs, 298 to 313 µs on a new one, against 204 to 220 µs for the raw
// driver, whose schema is made again at each open.
func backends() []backend {
	pgURL, redisURL := os.Getenv("TURNKIT_POSTGRES_URL"), os.Getenv("TURNKIT_REDIS_URL")
	bs := []backend{
		{name: "memory", open: func(testing.TB) (session.Store, state.Store, func(), func()) {
			s := memory.New()
			return s, memstore.New(), func() { s.Close() }, nil
		}},
		sqliteIn("sqlite", "", false),
		{name: "postgres", open: func(tb testing.TB) (session.Store, state.Store, func(), func()) {
			ctx := context.Background()
			if err := dropSchema(ctx, pgURL, storeSchema); err != nil {
				tb.Fatal(err)
			}
			s, err := postgres.Open(ctx, pgURL, postgres.WithSchema(storeSchema))
			if err != nil {
				tb.Fatal(err)
			}
			return s, s, func() { s.Close() }, nil
		}},
		{name: "redis", open: func(tb testing.TB) (session.Store, state.Store, func(), func()) {
			ctx := context.Background()
			if err := dropRedisPrefix(ctx, redisURL, storePrefix); err != nil {
				tb.Fatal(err)
			}
			s, err := redis.Open(ctx, redisURL, redis.WithPrefix(storePrefix))
			if err != nil {
				tb.Fatal(err)
			}
			return s, s, func() { s.Close() }, nil
		}},
	}
	if pgURL == "" {
		bs[2].skip = "TURNKIT_POSTGRES_URL is not set"
	}
	if redisURL == "" {
		bs[3].skip = "TURNKIT_REDIS_URL is not set"
	}
	return bs
}

// storeSchema and storePrefix are where the crash-safe scenarios keep the
// PostgreSQL and Redis stores' data, each removed at every open.
const (
	storeSchema = "turnbench"
	storePrefix = "turnbench:"
)

// dropSchema removes schema, and everything in it, from the server at url.
func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	return err
}

// dropRedisPrefix removes every key under prefix from the server at url.
func dropRedisPrefix(ctx context.Context, url, prefix string) error {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return err
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	return dropPrefix(ctx, c, prefix)
}

// sealedSQLite is SQLite with encryption at rest (session/encrypt: the
// keyring's codec on the checkpoints, and its item codec on the items,
// which the store seals as it writes them), under an in-memory key
// provider: the crash-safe rows beside SQLite's own.
func sealedSQLite() backend { return sqliteIn("sqlite-sealed", "", true) }

// sqliteIn returns a SQLite backend named name whose database is a file
// in a new temporary folder under root ("": the system's), sealed as
// sealedSQLite's or plain.
func sqliteIn(name, root string, sealed bool) backend {
	return backend{name: name, open: func(tb testing.TB) (session.Store, state.Store, func(), func()) {
		dir, err := os.MkdirTemp(root, "turnbench-"+name+"-")
		if err != nil {
			tb.Fatal(err)
		}
		path := filepath.Join(dir, "bench.db")
		if !sealed {
			s, err := sqlite.Open(path)
			if err != nil {
				tb.Fatal(err)
			}
			return s, s, func() { s.Close(); os.RemoveAll(dir) }, sqliteSettle(tb, path)
		}
		kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("bench"))
		db, err := sqlite.Open(path, sqlite.WithCodec(kr.Codec()), sqlite.WithItemCodec(kr))
		if err != nil {
			tb.Fatal(err)
		}
		s := encrypt.Wrap(db, kr)
		return s, s, func() { s.Close(); os.RemoveAll(dir) }, sqliteSettle(tb, path)
	}}
}

// memoryFS is the folder of a file system in memory (tmpfs), where a
// SQLite file's writes reach no disk and its syncs return at once; ""
// with why not, where there is none.
func memoryFS() (dir, skip string) {
	const shm = "/dev/shm"
	fi, err := os.Stat(shm)
	if err != nil || !fi.IsDir() {
		return "", "no file system in memory at " + shm
	}
	f, err := os.CreateTemp(shm, "turnbench-probe-")
	if err != nil {
		return "", shm + " is not writable: " + err.Error()
	}
	f.Close()
	os.Remove(f.Name())
	return shm, ""
}

// A chain is what a crash-safe scenario runs.
type chain int

const (
	persistenceAlone   chain = iota // persistence, no checkpoints
	crashSafe                       // persistence over the checkpointer's session, then the checkpointer
	crashSafeRetryable              // the same, with the tool declared retryable (checkpoint.WithRetryableTools)
	crashSafeRequest                // crashSafe under a context that can be cancelled, as a request's is
)

func (c chain) String() string {
	return [...]string{"persistence", "checkpoint", "checkpoint-retryable", "checkpoint-request-ctx"}[c]
}

// crashSafeTurns times one turn per iteration of a Runner with chain c
// on be, from a session that holds h items of history, read by
// persistence as in production. With checkpoints it reports the bytes each
// checkpoint save writes (B/save), measured on one more run after the
// timed ones.
func crashSafeTurns(b *testing.B, be backend, h int, c chain) {
	crashSafeTurnsClocked(b, be, h, c, nil)
}

// crashSafeTurnsClocked is crashSafeTurns that also reports, with clock
// not nil, the process's CPU time per timed turn (cpuMetric).
func crashSafeTurnsClocked(b *testing.B, be backend, h int, c chain, clock *cpuClock) {
	crashSafeTurnsWith(b, be, h, c, clock, nil)
}

// crashSafeTurnsWith is crashSafeTurnsClocked that, with pair not nil,
// also makes a tool turn's writes with the raw driver pair opens after
// each of the chain's tool turns, inside the next tool call (see
// pairedTurns).
func crashSafeTurnsWith(b *testing.B, be backend, h int, c chain, clock *cpuClock, pair func(testing.TB) rawDriver) {
	sess, st, closeFn, settle := be.open(b)
	defer closeFn()
	ctx := context.Background()
	sessionID := fmt.Sprintf("crashsafe-%s-%d-%v", be.name, h, c)
	if err := sess.Clear(ctx, sessionID); err != nil {
		b.Fatal(err)
	}
	hist := makeHistory(h)
	if err := sess.Append(ctx, sessionID, "history", hist); err != nil {
		b.Fatal(err)
	}
	mws := []pipeline.Middleware{persistence.Middleware(sess)}
	var opts []checkpoint.Option
	if c == crashSafeRetryable {
		opts = append(opts, checkpoint.WithRetryableTools(func(*pipeline.ToolCall) bool { return true }))
	}
	if c != persistenceAlone {
		cp := checkpoint.New(st, append(opts[:len(opts):len(opts)], checkpoint.WithSession(sess))...)
		mws = []pipeline.Middleware{cp.Middleware()}
	}
	tool := trivialTool()
	var paired *pairedTurns
	if pair != nil {
		paired = newPairedTurns(b, pair, h)
		defer paired.drv.close()
		tool = paired.tool(tool)
	}
	var prev *state.Run
	prepare := func(run *state.Run) {
		if paired != nil {
			paired.reset(b)
		}
		// Back to the history alone: pop the previous run's items and drop
		// its checkpoint (fresh runs reuse the run ID).
		for i := 0; prev != nil && i < prev.Len(); i++ {
			if _, ok, err := sess.Pop(ctx, sessionID); err != nil || !ok {
				b.Fatalf("pop the previous run's items: %v, %v", ok, err)
			}
		}
		if err := st.Delete(ctx, run.ID()); err != nil {
			b.Fatal(err)
		}
		runcore.SetSessionID(run, sessionID)
		prev = run
		if settle != nil {
			settle()
		}
	}
	// A request's context can end: a driver may watch it for every
	// statement (modernc's sqlite and pgx start a goroutine to interrupt
	// one), which no turn under context.Background pays.
	runCtx := context.Background()
	if c == crashSafeRequest {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithCancel(runCtx)
		defer cancel()
	}
	runnerTurnsIn(runCtx, b, hist, crashSafeRunTurns, prepare, tool, clock, pipeline.WithMiddleware(mws...))
	if paired != nil {
		paired.report(b)
	}
	if ns, ok := clock.perTurn(); ok {
		b.ReportMetric(ns, cpuMetric)
	}
	if c != persistenceAlone {
		b.ReportMetric(bytesPerSave(b, st, sess, sessionID, h, opts), "B/save")
	}
}

// bytesPerSave runs a few turns untimed with the crash-safe chain over a
// store that measures each save's delta and returns the mean.
func bytesPerSave(b *testing.B, st state.Store, sess session.Store, sessionID string, h int, opts []checkpoint.Option) float64 {
	ctx := context.Background()
	m := &measuringStore{Store: st}
	cp := checkpoint.New(m, append(opts[:len(opts):len(opts)], checkpoint.WithSession(sess))...)
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: "bench", Model: turnsModel(8), Tools: []pipeline.Tool{trivialTool()}}
	run := state.NewRun(fmt.Sprintf("bytes-%d", h), "bench")
	runcore.SetSessionID(run, sessionID)
	if err := st.Delete(ctx, run.ID()); err != nil {
		b.Fatal(err)
	}
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run)); err != nil {
		b.Fatal(err)
	}
	if m.saves <= 1 {
		return 0
	}
	// The first save of a run writes its context once; the figure is the
	// steady state after it.
	return float64(m.bytes-m.first) / float64(m.saves-1)
}

// measuringStore adds up the size of each save's delta.
type measuringStore struct {
	state.Store
	saves, bytes, first int
}

func (m *measuringStore) Save(ctx context.Context, run *state.Run) error {
	d, err := run.Delta()
	if err != nil {
		return err
	}
	n := len(d.Head) + len(d.Context)
	for _, p := range d.Items {
		n += len(p.Data)
	}
	if m.saves == 0 {
		m.first = n
	}
	m.saves++
	m.bytes += n
	return m.Store.Save(ctx, run)
}

// crashSafeScenarios returns, for each backend and history size, a turn
// with persistence alone, on the database backends the raw driver doing a
// crash-safe tool turn's durable writes (crashraw.go), and turns with the
// crash-safe chain, with the tool as it is and declared retryable, and at
// the first history size the first of these again under a context that
// can be cancelled, as a request's is (checkpoint-request-ctx): their
// baseline is persistence alone, their second one the raw driver, and
// their third the raw driver doing exactly the store's writes
// (raw-same-writes, crashsame_*.go).
func crashSafeScenarios() []Scenario {
	var out []Scenario
	for _, be := range backends() {
		for _, h := range Histories() {
			alone := fmt.Sprintf("crashsafe/%s/%s/history=%d", be.name, persistenceAlone, h)
			out = append(out, Scenario{Name: alone, Group: "crashsafe", PerOp: 1, Unit: "turn", Skip: be.skip,
				Bench: func(b *testing.B) { crashSafeTurns(b, be, h, persistenceAlone) }})
			raw := ""
			if open, ok := rawDrivers[be.name]; ok {
				raw = fmt.Sprintf("crashsafe/%s/raw-driver/history=%d", be.name, h)
				out = append(out, Scenario{Name: raw, Group: "crashsafe", Baseline: alone, PerOp: 1, Unit: "turn", Skip: be.skip,
					Bench: func(b *testing.B) { rawDriverTurns(b, open, h) }})
			}
			same := ""
			if open, ok := sameDrivers[be.name]; ok {
				same = fmt.Sprintf("crashsafe/%s/raw-same-writes/history=%d", be.name, h)
				out = append(out, Scenario{Name: same, Group: "crashsafe", Baseline: alone, PerOp: 1, Unit: "turn", Skip: be.skip,
					Bench: func(b *testing.B) { rawDriverTurns(b, open, h) }})
			}
			chains := []chain{crashSafe, crashSafeRetryable}
			if h == Histories()[0] {
				chains = append(chains, crashSafeRequest)
			}
			for _, c := range chains {
				out = append(out, Scenario{Name: fmt.Sprintf("crashsafe/%s/%s/history=%d", be.name, c, h), Group: "crashsafe",
					Baseline: alone, Raw: raw, Same: same, PerOp: 1, Unit: "turn", Skip: be.skip,
					Bench: func(b *testing.B) { crashSafeTurns(b, be, h, c) }})
			}
			if open, ok := sameDrivers[be.name]; ok && h == Histories()[0] {
				// The crash-safe turn interleaved with the same writes
				// (pairedTurns): its time is the chain's alone, its
				// third ratio the median of the interleaved ones.
				out = append(out, Scenario{Name: fmt.Sprintf("crashsafe/%s/%s-paired/history=%d", be.name, crashSafe, h), Group: "crashsafe",
					Baseline: alone, Raw: raw, Same: same, PerOp: 1, Unit: "turn", Skip: be.skip,
					Bench: func(b *testing.B) { crashSafeTurnsWith(b, be, h, crashSafe, nil, open) }})
			}
		}
	}
	for i := range out {
		if out[i].Skip != "" {
			out[i].Bench = nil
		}
	}
	return out
}

// sealedScenarios returns, for each history size and chain, a crash-safe
// turn on SQLite without encryption and then the same turn with it
// (sqlite-sealed), whose baseline is the first: the ratio is issue 32's,
// a turn sealed ÷ the same turn plain. The two run one after the other in
// every round, so that they meet the same machine: SQLite's wall time
// here is mostly its writes, which the rows run before them (the
// PostgreSQL and Redis servers' own writes, on the same disk) can slow.
// Then the same pair with the database in memory (sqlite-tmpfs and
// sqlite-sealed-tmpfs, a tmpfs file: the same store and statements, no
// disk under its writes and syncs), which leaves out what the disk adds
// to both and so to the ratio's noise. Every row reports the process's
// CPU time per turn beside its wall time, and is Paired: turnbench
// takes the ratio as the median over the rounds of each round's pair.
func sealedScenarios() []Scenario {
	var out []Scenario
	shm, skip := memoryFS()
	pairs := []struct{ plain, sealed backend }{
		{sqliteIn("sqlite", "", false), sealedSQLite()},
		{sqliteIn("sqlite-tmpfs", shm, false), sqliteIn("sqlite-sealed-tmpfs", shm, true)},
	}
	pairs[1].plain.skip, pairs[1].sealed.skip = skip, skip
	for _, h := range Histories() {
		for _, c := range []chain{persistenceAlone, crashSafe, crashSafeRetryable} {
			for _, p := range pairs {
				base := fmt.Sprintf("sealed/%s/%s/history=%d", p.plain.name, c, h)
				out = append(out,
					Scenario{Name: base, Group: "sealed", PerOp: 1, Unit: "turn", Skip: p.plain.skip, Paired: true,
						Bench: func(b *testing.B) { crashSafeTurnsClocked(b, p.plain, h, c, &cpuClock{}) }},
					Scenario{Name: fmt.Sprintf("sealed/%s/%s/history=%d", p.sealed.name, c, h), Group: "sealed", Baseline: base,
						PerOp: 1, Unit: "turn", Skip: p.sealed.skip, Paired: true,
						Bench: func(b *testing.B) { crashSafeTurnsClocked(b, p.sealed, h, c, &cpuClock{}) }})
			}
		}
	}
	for i := range out {
		if out[i].Skip != "" {
			out[i].Bench = nil
		}
	}
	return out
}

// turnsModel calls the trivial tool n times, then replies.
func turnsModel(n int) pipeline.Model {
	return scripted.Generate(func(k int) scripted.Step {
		if k > n {
			return replyStep
		}
		return callStep
	})
}

// pairedTurns interleaves a crash-safe chain's tool turns with a raw
// driver's: at each tool call of a run but its first, the time since the
// previous tool call returned is one tool turn of the chain (its commit,
// the next model call, the save before the tool), and the driver then
// makes one tool turn's writes (the save, then the commit), timed on its
// own. On a shared machine, whose speed drifts between two scenarios run
// one after the other, each pair meets the same machine. The benchmark's
// time per iteration is then the two's; report gives each one's and
// their ratio.
type pairedTurns struct {
	drv         rawDriver
	ws          rawTurns
	j           int       // the driver's next tool turn in its run
	last        time.Time // when the previous tool call of the run returned; zero at a run's start
	store, same time.Duration
	turns       int
}

func newPairedTurns(b *testing.B, open func(testing.TB) rawDriver, h int) *pairedTurns {
	p := &pairedTurns{ws: recordTurnWrites(b, h), drv: open(b)}
	if err := p.drv.seed(context.Background(), makeHistory(h)); err != nil {
		b.Fatal(err)
	}
	return p
}

// reset starts a run of the driver, as the chain's runs start, untimed.
func (p *pairedTurns) reset(b *testing.B) {
	ctx := context.Background()
	if err := p.drv.reset(ctx, p.ws[0].save.head); err != nil {
		b.Fatal(err)
	}
	if st, ok := p.drv.(settler); ok {
		if err := st.settle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	p.j, p.last = 0, time.Time{}
}

// tool returns t, which first measures the chain's turn that ended and
// makes the driver's.
func (p *pairedTurns) tool(t pipeline.Tool) pipeline.Tool {
	return pairedTool{Tool: t, p: p}
}

// A pairedTool is a tool whose calls interleave pairedTurns' turns.
type pairedTool struct {
	pipeline.Tool
	p *pairedTurns
}

func (t pairedTool) Call(ctx context.Context, call *pipeline.ToolCall) (string, error) {
	p := t.p
	now := time.Now()
	if !p.last.IsZero() {
		p.store += now.Sub(p.last)
		if err := p.ws.play(ctx, p.drv, p.j); err != nil {
			return "", fmt.Errorf("the raw driver's tool turn %d: %w", p.j, err)
		}
		p.j++
		p.same += time.Since(now)
		p.turns++
	}
	out, err := t.Tool.Call(ctx, call)
	p.last = time.Now()
	return out, err
}

// report reports the chain's and the driver's mean time per tool turn and
// their ratio.
func (p *pairedTurns) report(b *testing.B) {
	if p.turns == 0 {
		return
	}
	b.ReportMetric(float64(p.store.Nanoseconds())/float64(p.turns), pairedOwnMetric)
	b.ReportMetric(float64(p.same.Nanoseconds())/float64(p.turns), pairedSameMetric)
	b.ReportMetric(float64(p.store)/float64(p.same), pairedRatioMetric)
}
