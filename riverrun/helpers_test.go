package riverrun_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver River's SQLite driver runs on
)

// store is a backend's store: sessions and checkpoints.
type store interface {
	session.Store
	state.Store
	Close() error
}

// backend is where a test's stores and River's tables live.
type backend struct {
	Name   string `json:"name"` // "postgres" or "sqlite"
	URL    string `json:"url,omitempty"`
	Schema string `json:"schema,omitempty"`
	Dir    string `json:"dir,omitempty"`
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// pgBackend returns a fresh PostgreSQL schema, dropped when the test ends;
// it skips (or fails, in CI) without a server.
func pgBackend(t testing.TB) backend {
	t.Helper()
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	b := backend{Name: "postgres", URL: url, Schema: randomName("riverrun_test_"), Dir: t.TempDir()}
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.Schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", b.Schema, err)
		}
	})
	return b
}

func sqliteBackend(t testing.TB) backend {
	return backend{Name: "sqlite", Dir: t.TempDir()}
}

// openStore opens the backend's turnkit store.
func (b backend) openStore(ctx context.Context) (store, error) {
	if b.Name == "postgres" {
		return postgres.Open(ctx, b.URL, postgres.WithSchema(b.Schema))
	}
	return sqlite.Open(filepath.Join(b.Dir, "turnkit.db"))
}

// riverDB is River's database handle for one backend.
type riverDB[TTx any] struct {
	driver riverdriver.Driver[TTx]
	close  func()
}

func openPG(ctx context.Context, b backend) (*riverDB[pgx.Tx], error) {
	pool, err := pgxpool.New(ctx, b.URL)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{b.Schema}.Sanitize()); err != nil {
		pool.Close()
		return nil, err
	}
	d := riverpgxv5.New(pool)
	if err := migrate(ctx, d, b.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	return &riverDB[pgx.Tx]{driver: d, close: pool.Close}, nil
}

func openSQLite(ctx context.Context, b backend) (*riverDB[*sql.Tx], error) {
	db, err := sql.Open("sqlite", filepath.Join(b.Dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // riversqlite's advice: SQLite runs one writer at a time
	d := riversqlite.New(db)
	if err := migrate(ctx, d, ""); err != nil {
		db.Close()
		return nil, err
	}
	return &riverDB[*sql.Tx]{driver: d, close: func() { db.Close() }}, nil
}

var migrateMu sync.Mutex // River's migrations of one SQLite file from two clients at once lock it

func migrate[TTx any](ctx context.Context, d riverdriver.Driver[TTx], schema string) error {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	m, err := rivermigrate.New(d, &rivermigrate.Config{Schema: schema, Logger: quietLogger()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fastRetry retries a failed job after 50ms.
type fastRetry struct{}

func (fastRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(50 * time.Millisecond) }

// riverConfig is the configuration of the tests' River clients.
func riverConfig(schema string, workers *river.Workers) *river.Config {
	cfg := &river.Config{
		Schema:            schema,
		Logger:            quietLogger(),
		FetchPollInterval: 20 * time.Millisecond,
		FetchCooldown:     5 * time.Millisecond,
		RetryPolicy:       fastRetry{},
		JobTimeout:        20 * time.Second,
		Workers:           workers,
	}
	if workers != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}
	}
	return cfg
}

// testTool returns a tool that records its executions in fx; while block
// is set, the first execution to see it clears it and waits for the
// call's context to end.
func testTool(name string, fx *pipelinetest.Ledger, block *atomic.Bool) pipeline.Tool {
	return &pipelinetest.EffectTool{
		Name: name, Ledger: fx, Description: "test tool",
		During: func(ctx context.Context, _ *pipeline.ToolCall) error {
			if block.CompareAndSwap(true, false) {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		},
		Output: func(c *pipeline.ToolCall) string { return `{"ok":true,"key":"` + c.IdempotencyKey() + `"}` },
	}
}

// testModel answers by the run's own items: first a call of each of the
// tools, all in one response, then, once a tool's output is in, the final
// message "done". Its FailNext queues failures of a run's next calls.
func testModel(tools []string) *scripted.Model {
	if len(tools) == 0 {
		return scripted.Rules(scripted.On(nil, scripted.Reply("done")))
	}
	calls := make([]scripted.Part, len(tools))
	for i, name := range tools {
		calls[i] = scripted.Call(name, `{}`)
	}
	return scripted.Rules(
		scripted.On(scripted.AfterOutput(""), scripted.Reply("done")),
		scripted.On(nil, scripted.Respond(calls...)),
	)
}

// testStack is a worker's runner, checkpointer and agent.
type testStack struct {
	runner *pipeline.Runner
	cp     *checkpoint.Checkpointer
	agent  *pipeline.Agent
	model  *scripted.Model
	fx     *pipelinetest.Ledger
	block  *atomic.Bool
}

// newTestStack wires an agent named "agent" whose model calls tools
// (each a recording testTool; "transfer" needs approval).
func newTestStack(st store, tools ...string) *testStack {
	s := &testStack{fx: &pipelinetest.Ledger{}, block: &atomic.Bool{}, model: testModel(tools)}
	s.cp = checkpoint.New(st, checkpoint.WithSession(st))
	s.runner = pipeline.NewRunner(pipeline.WithMiddleware(
		s.cp.Middleware(),
		approval.Require(approval.ByTool("transfer")),
	))
	var ptools []pipeline.Tool
	for _, name := range tools {
		if name == "ask" {
			ptools = append(ptools, askTool{})
			continue
		}
		ptools = append(ptools, testTool(name, s.fx, s.block))
	}
	s.agent = &pipeline.Agent{Name: "agent", Instructions: "test", Model: s.model, Tools: ptools}
	return s
}

// env is one backend with a started River client working runs with a
// test stack.
type env[TTx any] struct {
	b     backend
	store store
	stack *testStack
	rc    *river.Client[TTx]
	runs  *riverrun.Client[TTx]
}

type opener[TTx any] func(context.Context, backend) (*riverDB[TTx], error)

func newEnv[TTx any](t *testing.T, b backend, open opener[TTx], tools ...string) *env[TTx] {
	t.Helper()
	ctx := t.Context()
	st, err := b.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	db, err := open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.close)
	stack := newTestStack(st, tools...)
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(stack.runner, stack.cp, riverrun.NewRegistry(stack.agent)))
	rc, err := river.NewClient(db.driver, riverConfig(b.Schema, workers))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rc.Stop(sctx); err != nil {
			t.Errorf("stop River: %v", err)
		}
	})
	return &env[TTx]{b: b, store: st, stack: stack, rc: rc, runs: riverrun.NewClient(rc, st)}
}

// waitJob polls the job until it is in one of the states, and returns it.
func waitJob[TTx any](t *testing.T, rc *river.Client[TTx], id int64, states ...rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := rc.JobGet(t.Context(), id)
		if err != nil {
			t.Fatalf("JobGet(%d) = %v", id, err)
		}
		for _, s := range states {
			if j.State == s {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d (%s) is %s after 20s, want one of %v; errors %v", id, j.EncodedArgs, j.State, states, j.Errors)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRunJob waits for the run's latest job to reach one of the states.
func waitRunJob[TTx any](t *testing.T, runs *riverrun.Client[TTx], runID string, states ...rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	jobs, err := runs.Jobs(t.Context(), runID)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("Jobs(%s) = %d jobs, %v", runID, len(jobs), err)
	}
	return waitJob(t, runs.River(), jobs[len(jobs)-1].ID, states...)
}

// output decodes a job's recorded output.
func output(t *testing.T, j *rivertype.JobRow) riverrun.Output {
	t.Helper()
	out, ok, err := riverrun.OutputOf(j.Metadata)
	if err != nil || !ok {
		t.Fatalf("job %d output: ok %v, %v; metadata %s", j.ID, ok, err, j.Metadata)
	}
	return out
}

// forEach runs the test on PostgreSQL and on SQLite.
func forEach(t *testing.T, pg func(*testing.T, *env[pgx.Tx]), lite func(*testing.T, *env[*sql.Tx]), tools ...string) {
	t.Run("postgres", func(t *testing.T) { pg(t, newEnv(t, pgBackend(t), openPG, tools...)) })
	t.Run("sqlite", func(t *testing.T) { lite(t, newEnv(t, sqliteBackend(t), openSQLite, tools...)) })
}

// askTool asks the user for a number, as an MCP tool under
// mcp.WithElicitation does: it returns a *pipeline.ElicitationError until
// the run holds an answer to its request, then the answer.
type askTool struct{}

var askRequest = state.Elicitation{Server: "test", Message: "how many?", Schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`}

func (askTool) Spec() pipeline.ToolSpec {
	return pipeline.ToolSpec{Name: "ask", Description: "asks the user"}
}

func (askTool) Call(_ context.Context, c *pipeline.ToolCall) (string, error) {
	d, ok := c.Turn.Run.ElicitationAnswerFor(c.Name, c.CallID, askRequest)
	if !ok {
		return "", &pipeline.ElicitationError{Tool: c.Name, CallID: c.CallID, Elicitation: askRequest}
	}
	return d.Answer.Action.String() + " " + d.Answer.Content, nil
}
