package scenario

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // the driver the SQLite store runs on

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// The raw-driver rows of the crash-safe group: each backend's driver
// doing, as plain SQL or commands, the durable writes a crash-safe tool
// turn makes, in as many transactions and round trips: the save before
// the tool (the checkpoint's head and the delta's pieces), then the
// commit (the next save's head and pieces with the call and its output
// appended to the session, as SaveAppend writes them), with bytes of the
// sizes the checkpointer writes, into tables or keys of the stores'
// shape, in no more statements than the stores run for them (on SQLite a
// save's pieces in one insert, and the turn's items in one). What the
// stores add to those writes (the compare-and-swap on the
// version, the runs' listing, the session's write stamps and run places,
// the checks of an append) is what the ratio to these rows measures.

// A rawSave is one save of a crash-safe tool turn as the checkpointer
// made it: the head and the pieces of its delta.
type rawSave struct {
	head   []byte
	pieces []state.Piece
}

// rawTurnWrites are the durable writes of one crash-safe tool turn in a
// run's steady state: the save before the tool, then the commit, whose
// save goes with the items appended to the session.
type rawTurnWrites struct {
	save, commit rawSave
	items        []state.Item
}

// rawTurns are the durable writes of two consecutive tool turns of one
// run, which the raw rows replay in turn (see play): a save's head then
// differs from the head stored before it as a run's next head does, in
// its turn, usage and digest. One turn's writes replayed at every turn
// would make each save before the tool write the head of the commit
// before it once more, less its last save's changes, and PostgreSQL's log
// records of an update keep only the bytes that changed.
type rawTurns [2]rawTurnWrites

// play writes tool turn j of the run with drv: the writes of the recorded
// turn j % 2, at turn j's versions and positions.
func (ws *rawTurns) play(ctx context.Context, drv rawDriver, j int) error {
	k := j % 2
	return drv.turn(ctx, rawVersion(j), j-k, &ws[k])
}

// rawTurnMark is the first tool turn of the recorded run whose writes the
// raw rows replay: past the run's first save, which writes its context.
const rawTurnMark = 3

// recordTurnWrites runs a few crash-safe tool turns on the memory stores
// from h items of history, in a run and session with the raw rows' IDs,
// recording every save's delta and every append, and returns the writes
// of turns rawTurnMark and rawTurnMark+1. A delta does not depend on the
// store that writes it (the benchmark's stores neither sign nor seal).
func recordTurnWrites(tb testing.TB, h int) rawTurns {
	ctx := context.Background()
	rec := &recordingSessions{Store: memory.New()}
	defer rec.Store.Close()
	st := &recordingStore{Store: memstore.New(), log: &rec.log}
	if err := rec.Store.Append(ctx, rawSessionID, "history", makeHistory(h)); err != nil {
		tb.Fatal(err)
	}
	cp := checkpoint.New(st, checkpoint.WithSession(rec))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: "bench", Model: turnsModel(rawTurnMark + 2), Tools: []pipeline.Tool{trivialTool()}}
	run := state.NewRun(rawRunID, "bench")
	runcore.SetSessionID(run, rawSessionID)
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run)); err != nil {
		tb.Fatal(err)
	}
	// The log of a tool turn is save (before the tool), save (the
	// commit's), append; the run's first append is its input's.
	var ws rawTurns
	appends := 0
	for i, e := range rec.log {
		if e.items == nil {
			continue
		}
		appends++
		k := appends - 1 - rawTurnMark
		if k < 0 || k >= len(ws) {
			continue
		}
		if i < 2 || rec.log[i-1].items != nil || rec.log[i-2].items != nil || len(e.items) != 2 {
			tb.Fatalf("the writes of tool turn %d are not save, save, append of two items: %+v", rawTurnMark+k, rec.log)
		}
		ws[k] = rawTurnWrites{save: rec.log[i-2].save, commit: rec.log[i-1].save, items: e.items}
	}
	if appends <= rawTurnMark+len(ws) {
		tb.Fatalf("the recorded run made %d appends, want more than %d", appends, rawTurnMark+len(ws))
	}
	return ws
}

// A rawEvent is a save (items nil) or an append the recording stores saw.
type rawEvent struct {
	save  rawSave
	items []state.Item
}

type recordingSessions struct {
	session.Store
	log []rawEvent
}

func (s *recordingSessions) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if runID != "history" {
		s.log = append(s.log, rawEvent{items: append([]state.Item{}, items...)})
	}
	return s.Store.Append(ctx, sessionID, runID, items)
}

type recordingStore struct {
	state.Store
	log *[]rawEvent
}

func (s *recordingStore) Save(ctx context.Context, run *state.Run) error {
	d, err := run.Delta()
	if err != nil {
		return err
	}
	*s.log = append(*s.log, rawEvent{save: rawSave{head: d.Head, pieces: d.Items}})
	return s.Store.Save(ctx, run)
}

// A rawDriver writes a crash-safe tool turn's durable writes with a
// backend's driver.
type rawDriver interface {
	// seed stores the session's history, once.
	seed(ctx context.Context, history []state.Item) error
	// reset removes the run's checkpoint and session items and writes its
	// first head, as a fresh run of the timed scenarios starts.
	reset(ctx context.Context, head []byte) error
	// turn writes a tool turn of the run: w's save at version v, then
	// its commit at v+1, with w's positions moved on by at turns (see
	// shifted).
	turn(ctx context.Context, v int64, at int, w *rawTurnWrites) error
	close()
}

// A settler is a raw driver whose file has a write-ahead log that settle
// checkpoints and empties, untimed between runs, as sqliteSettle does
// for the store: the timed turns then copy into the database the pages
// they wrote, not the reset's.
type settler interface {
	settle(ctx context.Context) error
}

// The run and session the raw rows write, and the run's place in its
// session (the history's is 1).
const (
	rawRunID     = "bench"
	rawSessionID = "crashsafe-raw"
	rawRunPlace  = 2
)

// shifted returns p's position in tool turn j: a turn's items take two
// positions more than the turn before's, its model call one more below
// zero.
func shifted(seq int64, j int) int64 {
	if seq > 0 {
		return seq + 2*int64(j)
	}
	return seq - int64(j)
}

// rawVersion is the checkpoint version the save of tool turn j writes;
// its commit writes the next.
func rawVersion(j int) int64 { return 2 + 2*int64(j) }

// rawDriverTurns times one crash-safe tool turn's durable writes per
// iteration with the raw driver of be, into a session that holds h items
// of history; every crashSafeRunTurns turns, untimed, the run's
// checkpoint and items are removed, as the crash-safe scenarios start a
// fresh run, and a driver that has a write-ahead log to settle (a
// settler) settles it, as the store's scenarios do.
func rawDriverTurns(b *testing.B, open func(tb testing.TB) rawDriver, h int) {
	ctx := context.Background()
	ws := recordTurnWrites(b, h)
	drv := open(b)
	defer drv.close()
	if err := drv.seed(ctx, makeHistory(h)); err != nil {
		b.Fatal(err)
	}
	perRun := crashSafeRunTurns
	j := perRun
	b.ReportAllocs()
	for b.Loop() {
		if j == perRun {
			b.StopTimer()
			if err := drv.reset(ctx, ws[0].save.head); err != nil {
				b.Fatal(err)
			}
			if st, ok := drv.(settler); ok {
				if err := st.settle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			j = 0
			b.StartTimer()
		}
		if err := ws.play(ctx, drv, j); err != nil {
			b.Fatalf("tool turn %d: %v", j, err)
		}
		j++
	}
}

// rawSQLite is database/sql on the modernc driver, with the store's
// pragmas, on a file of its own, the statements prepared once. Its
// pieces are keyed as the store keys them, by run, version and position,
// so that a save's go after every stored one: keyed by run and position,
// a save wrote a leaf at each end of the run's rows (8.15 pages per turn
// at h=10 against 6.46).
type rawSQLite struct {
	dir                    string
	db                     *sql.DB
	head, clearRun, clearS *sql.Stmt
	item                   *sql.Stmt   // one item, for the history
	pieces, items          []*sql.Stmt // [n]: n rows in one insert, as the store writes a save's pieces and an append's items
}

// rawRows is the most rows rawSQLite's inserts write in one statement.
const rawRows = 4

const rawSQLiteSchema = `
CREATE TABLE run_checkpoints (run_id TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE run_checkpoint_items (run_id TEXT NOT NULL, version INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
	PRIMARY KEY (run_id, version, seq)) WITHOUT ROWID;
CREATE TABLE session_items (session_id TEXT NOT NULL, place INTEGER NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
	name TEXT NOT NULL, raw BLOB NOT NULL, PRIMARY KEY (session_id, place, seq)) WITHOUT ROWID;`

func openRawSQLite(tb testing.TB) rawDriver {
	dir, err := os.MkdirTemp("", "turnbench-sqlite-raw-")
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawSQLite{dir: dir}
	r.db, err = sql.Open("sqlite", filepath.Join(dir, "raw.db")+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
	if err == nil {
		_, err = r.db.Exec(rawSQLiteSchema)
	}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&r.head, `INSERT INTO run_checkpoints (run_id, version, data) VALUES (?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, data = excluded.data`},
		{&r.item, `INSERT INTO session_items (session_id, place, seq, kind, name, raw) VALUES (?, ?, ?, ?, ?, ?)`},
		{&r.clearRun, `DELETE FROM run_checkpoint_items WHERE run_id = ?`},
		{&r.clearS, `DELETE FROM session_items WHERE session_id = ? AND place = ?`},
	} {
		if err == nil {
			*p.st, err = r.db.Prepare(p.q)
		}
	}
	r.pieces, r.items = make([]*sql.Stmt, rawRows+1), make([]*sql.Stmt, rawRows+1)
	for n := 1; n <= rawRows && err == nil; n++ {
		r.pieces[n], err = r.db.Prepare(valuesSQL(`INSERT INTO run_checkpoint_items (run_id, version, seq, data) VALUES `, `(?, ?, ?, ?)`, n))
		if err == nil {
			r.items[n], err = r.db.Prepare(valuesSQL(`INSERT INTO session_items (session_id, place, seq, kind, name, raw) VALUES `,
				`(?, ?, ?, ?, ?, ?)`, n))
		}
	}
	if err != nil {
		r.close()
		tb.Fatal(err)
	}
	return r
}

// valuesSQL returns head followed by n times row, comma-separated.
func valuesSQL(head, row string, n int) string {
	return head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// inTx runs f in a transaction of db (immediate, by the DSN of the SQLite
// raw drivers) and commits it, or rolls it back if f fails.
func inTx(ctx context.Context, db *sql.DB, f func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (r *rawSQLite) seed(ctx context.Context, history []state.Item) error {
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		st := tx.StmtContext(ctx, r.item)
		for _, it := range history {
			if _, err := st.ExecContext(ctx, rawSessionID, 1, it.Seq(), it.Kind().String(), it.Name(), it.Raw()); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertItems appends a turn's items, rawRows an insert.
func (r *rawSQLite) insertItems(ctx context.Context, tx *sql.Tx, place int64, items []state.Item, j int) error {
	args := make([]any, 0, 6*min(len(items), rawRows))
	for len(items) > 0 {
		n := min(len(items), rawRows)
		args = args[:0]
		for _, it := range items[:n] {
			args = append(args, rawSessionID, place, shifted(it.Seq(), j), it.Kind().String(), it.Name(), it.Raw())
		}
		if _, err := tx.StmtContext(ctx, r.items[n]).ExecContext(ctx, args...); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

func (r *rawSQLite) settle(ctx context.Context) error { return truncateLog(ctx, r.db) }

func (r *rawSQLite) reset(ctx context.Context, head []byte) error {
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, r.clearRun).ExecContext(ctx, rawRunID); err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, r.clearS).ExecContext(ctx, rawSessionID, rawRunPlace); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, r.head).ExecContext(ctx, rawRunID, 1, head)
		return err
	})
}

func (r *rawSQLite) save(ctx context.Context, tx *sql.Tx, s *rawSave, version int64, j int) error {
	if _, err := tx.StmtContext(ctx, r.head).ExecContext(ctx, rawRunID, version, s.head); err != nil {
		return err
	}
	args := make([]any, 0, 4*min(len(s.pieces), rawRows))
	for ps := s.pieces; len(ps) > 0; {
		n := min(len(ps), rawRows)
		args = args[:0]
		for _, p := range ps[:n] {
			args = append(args, rawRunID, version, shifted(p.Seq, j), p.Data)
		}
		if _, err := tx.StmtContext(ctx, r.pieces[n]).ExecContext(ctx, args...); err != nil {
			return err
		}
		ps = ps[n:]
	}
	return nil
}

func (r *rawSQLite) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	if err := inTx(ctx, r.db, func(tx *sql.Tx) error { return r.save(ctx, tx, &w.save, v, j) }); err != nil {
		return err
	}
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		if err := r.save(ctx, tx, &w.commit, v+1, j); err != nil {
			return err
		}
		return r.insertItems(ctx, tx, rawRunPlace, w.items, j)
	})
}

func (r *rawSQLite) close() {
	if r.db != nil {
		_ = r.db.Close() // closes the prepared statements
	}
	_ = os.RemoveAll(r.dir)
}

// rawPostgres is pgx on a pool, each write one batch of statements sent
// in one round trip: the implicit transaction of a pipeline without BEGIN,
// committed by its Sync. A save updates the head's row, which reset
// wrote (firstHead), as the store's saves do: an upsert would also probe
// the key for an insert and log a lock of the row (54 bytes a save).
type rawPostgres struct {
	pool                                           *pgxpool.Pool
	firstHead, head, pieces, items, clearRun, clrS string
}

func openRawPostgres(tb testing.TB) rawDriver {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("TURNKIT_POSTGRES_URL"))
	if err != nil {
		tb.Fatal(err)
	}
	schema := pgx.Identifier{"turnbench_raw"}.Sanitize()
	r := &rawPostgres{pool: pool,
		firstHead: `INSERT INTO ` + schema + `.run_checkpoints (run_id, version, data) VALUES ($1, $2, $3)
			ON CONFLICT (run_id) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data`,
		head: `UPDATE ` + schema + `.run_checkpoints SET version = $2, data = $3 WHERE run_id = $1`,
		pieces: `INSERT INTO ` + schema + `.run_checkpoint_items (run_id, seq, version, data)
			SELECT $1, t.seq, $2, t.data FROM unnest($3::bigint[], $4::bytea[]) AS t(seq, data)`,
		items: `INSERT INTO ` + schema + `.session_items (session_id, place, seq, kind, name, raw)
			SELECT $1, $2, t.seq, t.kind, t.name, t.raw FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bytea[]) AS t(seq, kind, name, raw)`,
		clearRun: `DELETE FROM ` + schema + `.run_checkpoint_items WHERE run_id = $1`,
		clrS:     `DELETE FROM ` + schema + `.session_items WHERE session_id = $1 AND place = $2`,
	}
	_, err = pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema+`;
		DROP TABLE IF EXISTS `+schema+`.run_checkpoints, `+schema+`.run_checkpoint_items, `+schema+`.session_items;
		CREATE TABLE `+schema+`.run_checkpoints (run_id text NOT NULL PRIMARY KEY, version bigint NOT NULL, data bytea NOT NULL);
		CREATE TABLE `+schema+`.run_checkpoint_items (run_id text NOT NULL, seq bigint NOT NULL, version bigint NOT NULL,
			data bytea NOT NULL, PRIMARY KEY (run_id, seq));
		CREATE TABLE `+schema+`.session_items (session_id text NOT NULL, place bigint NOT NULL, seq bigint NOT NULL,
			kind text NOT NULL, name text NOT NULL, raw bytea NOT NULL, PRIMARY KEY (session_id, place, seq))`)
	if err != nil {
		pool.Close()
		tb.Fatal(err)
	}
	return r
}

// itemColumns returns items' columns for the items statement, at their
// positions in tool turn j.
func itemColumns(items []state.Item, j int) (seqs []int64, kinds, names []string, raws [][]byte) {
	for _, it := range items {
		seqs = append(seqs, shifted(it.Seq(), j))
		kinds = append(kinds, it.Kind().String())
		names = append(names, it.Name())
		raws = append(raws, it.Raw())
	}
	return seqs, kinds, names, raws
}

func (r *rawPostgres) send(ctx context.Context, b *pgx.Batch) error {
	return r.pool.SendBatch(ctx, b).Close()
}

func (r *rawPostgres) seed(ctx context.Context, history []state.Item) error {
	seqs, kinds, names, raws := itemColumns(history, 0)
	_, err := r.pool.Exec(ctx, r.items, rawSessionID, 1, seqs, kinds, names, raws)
	return err
}

func (r *rawPostgres) reset(ctx context.Context, head []byte) error {
	var b pgx.Batch
	b.Queue(r.clearRun, rawRunID)
	b.Queue(r.clrS, rawSessionID, rawRunPlace)
	b.Queue(r.firstHead, rawRunID, 1, head)
	return r.send(ctx, &b)
}

func (r *rawPostgres) queueSave(b *pgx.Batch, s *rawSave, version int64, j int) {
	b.Queue(r.head, rawRunID, version, s.head)
	if len(s.pieces) == 0 {
		return
	}
	seqs := make([]int64, len(s.pieces))
	data := make([][]byte, len(s.pieces))
	for i, p := range s.pieces {
		seqs[i], data[i] = shifted(p.Seq, j), p.Data
	}
	b.Queue(r.pieces, rawRunID, version, seqs, data)
}

func (r *rawPostgres) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	var save pgx.Batch
	r.queueSave(&save, &w.save, v, j)
	if err := r.send(ctx, &save); err != nil {
		return err
	}
	var commit pgx.Batch
	r.queueSave(&commit, &w.commit, v+1, j)
	seqs, kinds, names, raws := itemColumns(w.items, j)
	commit.Queue(r.items, rawSessionID, rawRunPlace, seqs, kinds, names, raws)
	return r.send(ctx, &commit)
}

func (r *rawPostgres) close() { r.pool.Close() }

// rawRedis is go-redis, each write one MULTI/EXEC (one round trip): the
// run's head hash (version and head) and items hash (a piece under its
// position, "<version>:<JSON>"), and the session's sorted set of items,
// whose members start with the place and position in 16 hex digits each,
// as the store keeps them.
type rawRedis struct {
	client               *goredis.Client
	headKey, itemsKey, s string
}

func openRawRedis(tb testing.TB) rawDriver {
	opts, err := goredis.ParseURL(os.Getenv("TURNKIT_REDIS_URL"))
	if err != nil {
		tb.Fatal(err)
	}
	const prefix = "turnbench-raw:"
	r := &rawRedis{client: goredis.NewClient(opts),
		headKey: prefix + "checkpoint:{" + rawRunID + "}", itemsKey: prefix + "checkpoint:{" + rawRunID + "}:items",
		s: prefix + "session:{" + rawSessionID + "}:items"}
	if err := r.client.Del(context.Background(), r.headKey, r.itemsKey, r.s).Err(); err != nil {
		r.close()
		tb.Fatal(err)
	}
	return r
}

func rawMembers(place int64, items []state.Item, j int) []goredis.Z {
	out := make([]goredis.Z, len(items))
	for i, it := range items {
		out[i] = goredis.Z{Member: fmt.Sprintf("%016x%016x", place, shifted(it.Seq(), j)) + it.Kind().String() + it.Name() + string(it.Raw())}
	}
	return out
}

func (r *rawRedis) seed(ctx context.Context, history []state.Item) error {
	return r.client.ZAdd(ctx, r.s, rawMembers(1, history, 0)...).Err()
}

func (r *rawRedis) reset(ctx context.Context, head []byte) error {
	_, err := r.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, r.itemsKey)
		p.ZRemRangeByLex(ctx, r.s, fmt.Sprintf("[%016x", rawRunPlace), fmt.Sprintf("(%016x", rawRunPlace+1))
		p.HSet(ctx, r.headKey, "v", 1, "d", head)
		return nil
	})
	return err
}

func (r *rawRedis) queueSave(ctx context.Context, p goredis.Pipeliner, s *rawSave, version int64, j int) {
	p.HSet(ctx, r.headKey, "v", version, "d", s.head)
	if len(s.pieces) == 0 {
		return
	}
	tag := strconv.FormatInt(version, 10) + ":"
	fields := make([]any, 0, 2*len(s.pieces))
	for _, pc := range s.pieces {
		fields = append(fields, shifted(pc.Seq, j), tag+string(pc.Data))
	}
	p.HSet(ctx, r.itemsKey, fields...)
}

func (r *rawRedis) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	if _, err := r.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		r.queueSave(ctx, p, &w.save, v, j)
		return nil
	}); err != nil {
		return err
	}
	_, err := r.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		r.queueSave(ctx, p, &w.commit, v+1, j)
		p.ZAdd(ctx, r.s, rawMembers(rawRunPlace, w.items, j)...)
		return nil
	})
	return err
}

func (r *rawRedis) close() { _ = r.client.Close() }

// rawDrivers returns the raw driver of each database backend by name.
var rawDrivers = map[string]func(tb testing.TB) rawDriver{
	"sqlite":   openRawSQLite,
	"postgres": openRawPostgres,
	"redis":    openRawRedis,
}

// sameDrivers returns, for each database backend by name, the raw driver
// doing exactly the store's writes of a crash-safe tool turn: the store's
// own schema or keys, rows and values, in its transactions and round
// trips, every value computed rather than read or checked
// (crashsame_*.go). The store's turn over it is the store's own cost.
var sameDrivers = map[string]func(tb testing.TB) rawDriver{
	"sqlite":   openSameSQLite,
	"postgres": openSamePostgres,
	"redis":    openSameRedis,
}

// sameAgent is the agent of the raw rows' run, as the recorded run's.
const sameAgent = "bench"

// sameTurn is the run's turn at the save of version v and at its commit:
// a crash-safe run's first commit is version 1 at turn 1, and its tool
// turn t saves version 2t and commits 2t+1, at turn t.
func sameTurn(v int64) int64 { return v / 2 }
