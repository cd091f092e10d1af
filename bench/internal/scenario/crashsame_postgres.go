package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// sameSchema is the PostgreSQL schema of the raw-same-writes driver: the
// store's own tables, made by its migrations.
const sameSchema = "turnbench_same"

// samePostgres is the raw-same-writes driver on PostgreSQL: pgx writing,
// into the store's own tables and indexes (session/postgres's schema, made
// by its migrations), the rows a crash-safe tool turn of the store writes,
// with the same values, in as many round trips and transactions: the save
// before the tool in one implicit transaction, then the commit in another.
// Every value is computed in Go where the store reads or checks it on the
// server: no compare-and-swap on the head's version, no advisory lock on
// the session, no lookup of the run's place or of the session's next write
// stamp, no check of the positions or of the call an output answers. It is
// the floor of the store's writes; what the store's turn costs over it is
// the store's own.
//
// A steady tool turn of the store (past a run's first commit) writes:
//
//   - the save (Store.Save of a delta that builds on the stored version,
//     ckptQueries.casPiecesOn, one statement): the head's row of
//     run_checkpoints (version, head, agent, turn, pending approvals; the
//     context as it was), and the delta's pieces into run_checkpoint_items
//     (run, position, version, JSON);
//   - the commit (Store.SaveAppend, ckptQueries.commitOn's paired
//     statement, one statement): the head's row again, the commit's pieces
//     if it has any, the session head's next write stamp
//     (session_heads.stamp), and the call and its output into
//     session_items, at the run's place, with
//     their call ID, the position of the call the output answers, and the
//     stamp.
//
// The run's listing row (run_index) takes the session and status only when
// they change, which they do not while a run goes on: neither the store
// nor this driver writes it in a tool turn.
//
// Each write is one statement (data-modifying CTEs) sent with pgx's Exec,
// one round trip in the implicit transaction of the statement, as the
// store's save and commit are.
type samePostgres struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	// The statements of saves and commits by their numbers of pieces and
	// items (statement), with the schema's name.
	r          *strings.Replacer
	stmts      map[[2]int]string
	clearItems string // the run's session items, removed by reset
	placed     string // the run's place and the session's last stamp
	// place and stamp are the run's place in the session and the session's
	// last write stamp, as reset left them; turn moves stamp on.
	place, stamp int64
}

// openSamePostgres opens the raw-same-writes driver on the server at
// TURNKIT_POSTGRES_URL, in schema sameSchema, which it drops and has the
// store make again, so that the session's stamps and the listing's
// numbers start where a fresh store's do.
func openSamePostgres(tb testing.TB) rawDriver {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("TURNKIT_POSTGRES_URL"))
	if err != nil {
		tb.Fatal(err)
	}
	d, err := newSamePostgres(ctx, pool, sameSchema)
	if err != nil {
		pool.Close()
		tb.Fatal(err)
	}
	return d
}

// newSamePostgres returns the driver over pool in schema, made again by
// the store's migrations.
func newSamePostgres(ctx context.Context, pool *pgxpool.Pool, schema string) (*samePostgres, error) {
	s := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+s+` CASCADE`); err != nil {
		return nil, err
	}
	store, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	r := strings.NewReplacer("{{schema}}", s)
	d := &samePostgres{pool: pool, store: store, r: r, stmts: map[[2]int]string{},
		clearItems: r.Replace(`DELETE FROM {{schema}}.session_items WHERE session_id = $1
			AND place = (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2)`),
		placed: r.Replace(`SELECT (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
			(SELECT stamp FROM {{schema}}.session_heads WHERE session_id = $1)`),
	}
	return d, nil
}

// sameSaveSQL returns the statement of a save (items 0) or a commit: the
// head's row ($1 run, $2 version, $3 head, $4 agent, $5 turn, $6
// pending), the delta's pieces as rows of a VALUES list (a position and
// its JSON each, from $7 on), and for a commit, after those, the session
// head's stamp and the items (session, place, stamp, then a row of
// position, kind, name, JSON, call ID and the call an output answers for
// each item). Rows, not arrays: the store sends up to four pieces or
// items so, which costs the server and pgx less than arrays.
func sameSaveSQL(pieces, items int) string {
	n := 6
	arg := func(cast string) string {
		n++
		return "$" + strconv.Itoa(n) + cast
	}
	values := func(rows int, casts ...string) string {
		var b strings.Builder
		for i := range rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for c, cast := range casts {
				if c > 0 {
					b.WriteString(", ")
				}
				if i > 0 {
					cast = "" // the first row gives the columns their types
				}
				b.WriteString(arg(cast))
			}
			b.WriteString(")")
		}
		return b.String()
	}
	q := `WITH h AS (
			UPDATE {{schema}}.run_checkpoints SET version = $2, data = $3, agent = $4, turn = $5, pending = $6
			WHERE run_id = $1)`
	ins := ""
	if pieces > 0 {
		ins = `INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
			SELECT $1, c.seq, $2, c.data FROM (VALUES ` + values(pieces, "::bigint", "::bytea") + `) AS c(seq, data)`
	}
	if items == 0 {
		if ins == "" {
			return q + ` SELECT 1`
		}
		return q + `
		` + ins
	}
	if ins != "" {
		q += `,
		p AS (` + ins + `)`
	}
	session, place, stamp := arg("::text"), arg("::bigint"), arg("::bigint")
	return q + `,
		s AS (UPDATE {{schema}}.session_heads SET stamp = ` + stamp + ` WHERE session_id = ` + session + `)
		INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
		SELECT ` + session + `, ` + place + `, t.seq, t.kind, t.name, t.raw, t.call_id, t.answers, ` + stamp + `
		FROM (VALUES ` + values(items, "::bigint", "::text", "::text", "::bytea", "::bytea", "::bigint") + `)
			AS t(seq, kind, name, raw, call_id, answers)`
}

// statement returns the statement of a save with pieces pieces and, for
// a commit, items items (see sameSaveSQL), made once for each count.
func (d *samePostgres) statement(pieces, items int) string {
	k := [2]int{pieces, items}
	q, ok := d.stmts[k]
	if !ok {
		q = d.r.Replace(sameSaveSQL(pieces, items))
		d.stmts[k] = q
	}
	return q
}

// seed appends the history through the store, as the store's scenarios
// do.
func (d *samePostgres) seed(ctx context.Context, history []state.Item) error {
	return d.store.Append(ctx, rawSessionID, "history", history)
}

// reset removes the run's checkpoint (Store.Delete) and its session items,
// then has the store make the run's first commit, as a fresh run of the
// crash-safe chain starts: the run's first head, its context and input,
// its listing row, and its place in the session on the first reset (the
// run keeps it, as the store's scenarios' runs keep theirs). The head
// written is that run's own first head, not head, so that the head's row
// holds the context the store's runs hold. It then reads the run's place
// and the session's last stamp, which turn writes from.
func (d *samePostgres) reset(ctx context.Context, head []byte) error {
	if err := d.store.Delete(ctx, rawRunID); err != nil {
		return err
	}
	if _, err := d.pool.Exec(ctx, d.clearItems, rawSessionID, rawRunID); err != nil {
		return err
	}
	if err := firstCommit(ctx, d.store); err != nil {
		return err
	}
	return d.pool.QueryRow(ctx, d.placed, rawSessionID, rawRunID).Scan(&d.place, &d.stamp)
}

// firstCommit runs the crash-safe chain over st on the raw rows' run up
// to its first commit (the first SaveAppend, of the run's input), and
// stops it at its first model call, whose failure the checkpointer's save
// then does not write.
func firstCommit(ctx context.Context, st *postgres.Store) error {
	capped := &cappedPostgres{Store: st, left: 1}
	return runCapped(ctx, capped, capped, 0)
}

// A chainStore is the state and the session store of a crash-safe chain.
type chainStore interface {
	state.Store
	session.Store
}

// errStopRun is the failure of the model call that stops runCapped's run.
var errStopRun = errors.New("stop the run")

// errCapped is what a cappedPostgres returns for a save past its last.
var errCapped = errors.New("the run's last write was made")

// A cappedPostgres is the store, as both the state and the session store
// of a crash-safe chain (so that the checkpointer commits with
// SaveAppend), making only its next left saves (Save or SaveAppend) and
// refusing the rest: a chain over it that fails writes nothing of its
// failure.
type cappedPostgres struct {
	*postgres.Store
	left int
}

func (s *cappedPostgres) Save(ctx context.Context, run *state.Run) error {
	if s.left--; s.left < 0 {
		return errCapped
	}
	return s.Store.Save(ctx, run)
}

func (s *cappedPostgres) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	if s.left--; s.left < 0 {
		return errCapped
	}
	return s.Store.SaveAppend(ctx, run, sessionID, items)
}

// runCapped runs the raw rows' run with the crash-safe chain over st,
// which is cs or wraps it: turns tool turns, then a model call that fails,
// whose failure cs refuses to save, as it must refuse every save past
// the run's first commit and turns tool turns, or runCapped fails.
func runCapped(ctx context.Context, st chainStore, cs *cappedPostgres, turns int) error {
	calls, tool := 0, scripted.Generate(func(int) scripted.Step { return callStep })
	model := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if calls++; calls > turns {
			return nil, errStopRun
		}
		return tool.Respond(ctx, c)
	})
	cp := checkpoint.New(st, checkpoint.WithSession(st))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: sameAgent, Model: model, Tools: []pipeline.Tool{trivialTool()}}
	run := state.NewRun(rawRunID, sameAgent)
	runcore.SetSessionID(run, rawSessionID)
	_, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run))
	if !errors.Is(err, errStopRun) && !errors.Is(err, errCapped) {
		return fmt.Errorf("the run did not stop at its model call %d: %v", turns+1, err)
	}
	if want := int64(1 + 2*turns); run.Version() != want || cs.left >= 0 {
		return fmt.Errorf("the run saved version %d (%d saves left), want %d and a save refused", run.Version(), cs.left, want)
	}
	return nil
}

func (d *samePostgres) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	turn := sameTurn(v)
	args := make([]any, 0, 32)
	args = appendSameSave(args, &w.save, v, turn, j)
	if _, err := d.pool.Exec(ctx, d.statement(len(w.save.pieces), 0), args...); err != nil {
		return err
	}
	stamp := d.stamp + 1
	args = appendSameSave(args[:0], &w.commit, v+1, turn, j)
	seqs, kinds, names, raws := itemColumns(w.items, j)
	ids, answers := sameCalls(w.items, seqs)
	args = append(args, rawSessionID, d.place, stamp)
	for i := range seqs {
		args = append(args, seqs[i], kinds[i], names[i], raws[i], ids[i], answers[i])
	}
	if _, err := d.pool.Exec(ctx, d.statement(len(w.commit.pieces), len(w.items)), args...); err != nil {
		return err
	}
	d.stamp = stamp
	return nil
}

// appendSameSave appends to args the arguments of s's save at version v
// and turn, with s's pieces moved on by j turns.
func appendSameSave(args []any, s *rawSave, v, turn int64, j int) []any {
	args = append(args, rawRunID, v, s.head, sameAgent, turn, 0)
	for _, p := range s.pieces {
		args = append(args, shifted(p.Seq, j), p.Data)
	}
	return args
}

// sameCalls returns the call_id and answers columns of items at positions
// seqs, as the store computes them: a call's and an output's call ID
// (NULL for other items), and for an output the position of the latest
// call of the batch with its ID before it. The store takes the greater of
// that and the latest such call stored, which it looks up unless every
// output's call is in the batch; in a tool turn's commit it is, and this
// driver looks nothing up.
func sameCalls(items []state.Item, seqs []int64) (ids [][]byte, answers []*int64) {
	ids = make([][]byte, len(items))
	answers = make([]*int64, len(items))
	latest := make([]int64, len(items))
	for i, it := range items {
		k := it.Kind()
		if !k.IsCall() && !k.IsOutput() {
			continue
		}
		ids[i] = []byte(it.CallID())
		if !k.IsOutput() {
			continue
		}
		for c, call := range items {
			if call.Kind().IsCall() && seqs[c] < seqs[i] && call.CallID() == it.CallID() {
				latest[i] = max(latest[i], seqs[c])
			}
		}
		answers[i] = &latest[i]
	}
	return ids, answers
}

func (d *samePostgres) close() {
	_ = d.store.Close()
	d.pool.Close()
}
