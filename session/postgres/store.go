package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

const pkg = "postgres"

var (
	_ session.Store        = (*Store)(nil)
	_ session.ChangeReader = (*Store)(nil)
)

// A Store keeps sessions (and run checkpoints, see [Store.Save]) in
// PostgreSQL tables in one schema. It is safe for concurrent use by
// multiple goroutines and by many workers sharing the database.
type Store struct {
	pool  *pgxpool.Pool
	owned bool // Close closes the pool
	gate  rowcodec.Gate
	codec rowcodec.Codec // signing and verification of checkpoints
	items ItemCodec      // the stored form of items, or nil: canonical JSON
	q     queries
	ck    ckptQueries // checkpoint statements (checkpoint.go)
}

// queries are the statements with the schema name resolved once.
type queries struct {
	appendOne, appendExisting, runPlace, newRun, takeStamp, insertItems, storedItems, lockSession string
	// The common append, of a run that has its place, past position 1:
	// the session's shared lock, then the items (see Append).
	lockShared                                 string
	placed                                     placedStatements
	list, listBefore, lookup, pop              string
	hasItems, clearHead, clearRuns, clearItems string
	// What a session gained since a stamp, or its last items
	// (ReadChanges); Pop's move of the generation.
	changesSince, changesTail, bumpGen string
	// The listing of sessions and the pages of a session (browse.go).
	clearIndex, listSessions, searchSessions, page string
}

func newQueries(schemaName string) queries {
	r := strings.NewReplacer("{{schema}}", pgx.Identifier{schemaName}.Sanitize())
	return queries{
		// An append in one statement, which writes all of it or nothing:
		// the positions it appends to hold nothing or the same items, and
		// nobody takes them, or the run's place, after they were read (an
		// insert there fails on the key: see Append). It returns the
		// first position that holds another item, or 0 (if not 0, nothing
		// was written).
		appendOne: r.Replace(`WITH ` + appendReads + `,
			ok AS MATERIALIZED (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM stored WHERE NOT same)),
			` + appendWrites + `
			SELECT ` + appendDiffers),
		// The first statement of an append in a transaction, after
		// lockShared: find the run's place, take the items' write stamps,
		// insert the items; it returns the place (NULL for a new run, then
		// nothing was inserted nor stamped) and the count.
		appendExisting: r.Replace(`WITH r AS MATERIALIZED (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
			st AS (UPDATE {{schema}}.session_heads SET stamp = stamp + 1
				WHERE session_id = $1 AND EXISTS (SELECT 1 FROM r) RETURNING stamp),
			ins AS (INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
				SELECT $1, r.place, t.seq, t.kind, t.name, t.raw, t.call_id, ` + answersExpr("$1", "r.place") + `, st.stamp
				FROM r, st, ` + unnestItems(3) + `
					AS t(seq, kind, name, raw, call_id, batch_call)
				ON CONFLICT (session_id, place, seq) DO NOTHING RETURNING 1)
			SELECT (SELECT place FROM r), (SELECT count(*) FROM ins)`),
		runPlace: r.Replace(`SELECT place FROM {{schema}}.session_runs
			WHERE session_id = $1 AND run_id = $2`),
		lockSession: `SELECT pg_advisory_xact_lock(` + lockClass + `, hashtext($1))`,
		// lockShared also has the statement after it run on its generic
		// plan (see genericPlans), with no statement of its own for that.
		lockShared: `SELECT pg_advisory_xact_lock_shared(` + lockClass + `, hashtext($1)), ` + genericPlansCall,
		placed:     newPlacedStatements(r),
		// A session's first run lists the session (session_index).
		newRun: r.Replace(`WITH head AS (
				INSERT INTO {{schema}}.session_heads AS h (session_id, last_place) VALUES ($1, 1)
				ON CONFLICT (session_id) DO UPDATE SET last_place = h.last_place + 1
				RETURNING last_place),
			idx AS (
				INSERT INTO {{schema}}.session_index (session_id) SELECT $1 FROM head WHERE last_place = 1
				ON CONFLICT (session_id) DO NOTHING)
			INSERT INTO {{schema}}.session_runs (session_id, run_id, place)
			SELECT $1, $2, last_place FROM head
			ON CONFLICT (session_id, run_id) DO NOTHING
			RETURNING place`),
		// Take the session's next write stamp.
		takeStamp: r.Replace(`UPDATE {{schema}}.session_heads SET stamp = stamp + 1
			WHERE session_id = $1 RETURNING stamp`),
		// The items of a run at place $2, with the write stamp $9.
		insertItems: r.Replace(`INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
			SELECT $1, $2, t.seq, t.kind, t.name, t.raw, t.call_id, ` + answersExpr("$1", "$2") + `, $9::bigint
			FROM ` + unnestItems(3) + `
				AS t(seq, kind, name, raw, call_id, batch_call)
			ON CONFLICT (session_id, place, seq) DO NOTHING`),
		storedItems: r.Replace(`SELECT seq, kind, name, raw FROM {{schema}}.session_items
			WHERE session_id = $1 AND place = $2 AND seq = ANY($3::bigint[])`),
		list: r.Replace(`SELECT seq, kind, name, raw FROM (
				SELECT place, seq, kind, name, raw FROM {{schema}}.session_items WHERE session_id = $1
				ORDER BY place DESC, seq DESC LIMIT $2) last
			ORDER BY place, seq`),
		// The last $3 items before run $2's place, written before stamp
		// $4, with the session's last stamp.
		listBefore: r.Replace(`SELECT seq, kind, name, raw,
				COALESCE((SELECT stamp FROM {{schema}}.session_heads WHERE session_id = $1), 0) FROM (
				SELECT place, seq, kind, name, raw FROM {{schema}}.session_items
				WHERE session_id = $1 AND place < COALESCE(
					(SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
					9223372036854775807) AND stamp < $4
				ORDER BY place DESC, seq DESC LIMIT $3) last
			ORDER BY place, seq`),
		lookup: r.Replace(`SELECT i.seq, i.kind, i.name, i.raw
			FROM {{schema}}.session_runs r
			JOIN {{schema}}.session_items i ON i.session_id = r.session_id AND i.place = r.place
			WHERE r.session_id = $1 AND r.run_id = $2 AND i.seq = $3`),
		pop: r.Replace(`DELETE FROM {{schema}}.session_items
			WHERE (session_id, place, seq) = (
				SELECT session_id, place, seq FROM {{schema}}.session_items WHERE session_id = $1
				ORDER BY place DESC, seq DESC LIMIT 1 FOR UPDATE)
			RETURNING seq, kind, name, raw`),
		// One index entry, read as pop reads it, where count(*) read the
		// whole session (and EXISTS, left to the planner, a Seq Scan).
		hasItems: r.Replace(`SELECT 1 FROM {{schema}}.session_items WHERE session_id = $1
			ORDER BY place DESC, seq DESC LIMIT 1`),
		// A first row with the session's last stamp, its generation and
		// run $2's place (0 for none), then the items written at or after
		// stamp $3, by the stamps' index, in no order. One statement: one
		// snapshot.
		changesSince: r.Replace(`SELECT 0::bigint, 0::bigint, ''::text, ''::text, ''::bytea,
				COALESCE(h.stamp, 0), COALESCE(h.gen, 0),
				COALESCE((SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2), 0)
			FROM (SELECT 1) AS one LEFT JOIN {{schema}}.session_heads AS h ON h.session_id = $1
			UNION ALL 
			SELECT place, seq, kind, name, raw, 0, 0, 0 FROM {{schema}}.session_items
			WHERE session_id = $1 AND stamp >= $3`),
		// The same first row, then the session's last $3 items (all for
		// NULL), last first.
		changesTail: r.Replace(`SELECT 0::bigint, 0::bigint, ''::text, ''::text, ''::bytea,
				COALESCE(h.stamp, 0), COALESCE(h.gen, 0),
				COALESCE((SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2), 0)
			FROM (SELECT 1) AS one LEFT JOIN {{schema}}.session_heads AS h ON h.session_id = $1
			UNION ALL 
			(SELECT place, seq, kind, name, raw, 0, 0, 0 FROM {{schema}}.session_items
			WHERE session_id = $1 ORDER BY place DESC, seq DESC LIMIT $3)`),
		// Pop's first statement: it locks the head before the item, in the
		// order of an append.
		bumpGen: r.Replace(`UPDATE {{schema}}.session_heads SET gen = gen + 1 WHERE session_id = $1`),
		// The head stays, with its stamp: a session's stamps only go up;
		// its generation moves on.
		clearHead:  r.Replace(`UPDATE {{schema}}.session_heads SET last_place = 0, gen = gen + 1 WHERE session_id = $1`),
		clearRuns:  r.Replace(`DELETE FROM {{schema}}.session_runs WHERE session_id = $1`),
		clearItems: r.Replace(`DELETE FROM {{schema}}.session_items WHERE session_id = $1`),
		clearIndex: r.Replace(`DELETE FROM {{schema}}.session_index WHERE session_id = $1`),
		// Newest first below the cursor's serial ($1), $2 rows.
		listSessions: r.Replace(`SELECT serial, session_id FROM {{schema}}.session_index
			WHERE serial < $1 ORDER BY serial DESC LIMIT $2`),
		// The IDs after $1, from the prefix $2 up to $3 (the prefix and
		// U+10FFFF), in byte order, $4 rows.
		searchSessions: r.Replace(`SELECT serial, session_id FROM {{schema}}.session_index
			WHERE session_id > $1 AND session_id >= $2 AND session_id < $3 ORDER BY session_id LIMIT $4`),
		// A page of a session's items before ($2, $3), newest first, $4
		// rows, each with its run.
		page: r.Replace(`SELECT (SELECT r.run_id FROM {{schema}}.session_runs AS r WHERE r.session_id = i.session_id AND r.place = i.place),
				i.place, i.seq, i.kind, i.name, i.raw
			FROM {{schema}}.session_items AS i
			WHERE i.session_id = $1 AND (i.place, i.seq) < ($2, $3)
			ORDER BY i.place DESC, i.seq DESC LIMIT $4`),
	}
}

// appendReads are the common CTEs of the one-statement appends (appendOne
// and ckptQueries.saveAppend), which read: find the run's place (r),
// unnest the items (t: $1 session, $2 run, $3–$8 the columns of
// appendCols.args), and read what their positions hold already (stored:
// same, or another item), one index entry each (the LIMIT keeps the
// planner from reading the run's whole place instead).
//
// The session's shared lock is not theirs to take: a statement reads one
// snapshot, taken when it starts, so a lock it waited for would come
// after its reads, and a Clear that committed during the wait would be
// invisible to them: the run's place, which the Clear removed, and the
// positions it emptied, read as held. The lock is the statement before
// (lockShared) in the same transaction, and the reads see every Clear
// that committed before it was granted (TestClearDuringOneStatementAppend).
var appendReads = `r AS MATERIALIZED (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
	t AS MATERIALIZED (SELECT * FROM ` + unnestItems(3) + `
		AS t(seq, kind, name, raw, call_id, batch_call)),
	stored AS MATERIALIZED (
		SELECT t.seq, s.kind, (s.kind, s.name, s.raw) IS NOT DISTINCT FROM (t.kind, t.name, t.raw) AS same
		FROM r, t, LATERAL (
			SELECT kind, name, raw FROM {{schema}}.session_items
			WHERE session_id = $1 AND place = r.place AND seq = t.seq
			LIMIT 1) s)`

// appendWrites are the common CTEs of the one-statement appends that
// write, if the CTE ok has a row: the session's head gives the items
// their write stamps and a new run the session's next place (head, nr,
// as newRun), and the items not stored yet go in (app). The head's row
// lock orders the appends of a session, so stamps follow commit order. The
// inserts into session_runs and session_items have no ON CONFLICT for
// their keys: a run placed, or a position taken, by a transaction that
// committed after the statement's snapshot fails the statement
// (isTaken), and the append is made again in a transaction that reads
// after it.
var appendWrites = `head AS (
		INSERT INTO {{schema}}.session_heads AS h (session_id, last_place, stamp)
		SELECT $1, CASE WHEN EXISTS (SELECT 1 FROM r) THEN 0 ELSE 1 END, 1 FROM ok
		ON CONFLICT (session_id) DO UPDATE
			SET last_place = h.last_place + EXCLUDED.last_place, stamp = h.stamp + 1
		RETURNING last_place, stamp),
	sidx AS (
		INSERT INTO {{schema}}.session_index (session_id) SELECT $1 FROM head
		WHERE last_place = 1 AND NOT EXISTS (SELECT 1 FROM r)
		ON CONFLICT (session_id) DO NOTHING),
	nr AS (
		INSERT INTO {{schema}}.session_runs (session_id, run_id, place)
		SELECT $1, $2, last_place FROM head WHERE NOT EXISTS (SELECT 1 FROM r)
		RETURNING place),
	p AS MATERIALIZED (SELECT place FROM r, ok UNION ALL SELECT place FROM nr),
	app AS (
		INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
		SELECT $1, p.place, t.seq, t.kind, t.name, t.raw, t.call_id, ` + answersExpr("$1", "p.place") + `, head.stamp
		FROM p, head, t WHERE NOT EXISTS (SELECT 1 FROM stored WHERE stored.seq = t.seq))`

// appendDiffers is the last column of the one-statement appends: the
// first position that holds another item, or 0.
const appendDiffers = `COALESCE((SELECT min(seq) FROM stored WHERE NOT same), 0)`

// answersExpr is the answers column of an inserted row: for an output
// (batch_call not NULL), the latest call of the run with its ID before it,
// in the batch (batch_call) or stored (one lookup in session_items_calls);
// NULL for other items. The unique index session_items_answers refuses a
// second output for one call; the conflict target of the inserts stays the
// position, so that an idempotent retry is still skipped.
func answersExpr(session, place string) string {
	// ORDER BY … LIMIT 1 reads one entry of session_items_calls backwards;
	// max() over the same WHERE read every call with the ID under a
	// generic plan (2 ms against 0.08 ms at 3 000 calls of one ID).
	return `CASE WHEN t.batch_call IS NOT NULL THEN GREATEST(t.batch_call, COALESCE((
		SELECT c.seq FROM {{schema}}.session_items c
		WHERE c.session_id = ` + session + ` AND c.place = ` + place + ` AND c.call_id = t.call_id
			AND c.answers IS NULL AND c.seq < t.seq
		ORDER BY c.seq DESC LIMIT 1), 0)) END`
}

// lockClass is the first key of the advisory locks on sessions ("tkit"):
// appends hold a session's lock shared, Clear exclusive, so that a clear
// never orphans the items of an append in flight.
const lockClass = "1953196404"

// Open connects to the PostgreSQL database at url (a pgx connection string
// or URL), brings the store's schema up to date (see [Migrate]; with
// [WithoutMigrations] it only checks it), and returns a store that owns
// the connection pool: [Store.Close] closes it.
//
// Open fails with a [*SchemaError] wrapping [ErrSchemaVersion] if a newer
// version of this package migrated the schema, or, opened
// [WithoutMigrations], wrapping [ErrNotMigrated] if the schema is behind.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a store over a pool the caller owns (and closes, after the
// store's last use), bringing the store's schema up to date first (or,
// with [WithoutMigrations], checking it), and failing as [Open] does. The
// caller may share the pool with its own queries.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		panic("postgres: New called with a nil pool")
	}
	cfg := newConfig(opts)
	prepare := migrate
	if cfg.noMigrate {
		prepare = checkSchema
	}
	if err := prepare(ctx, pool, cfg.schema); err != nil {
		return nil, err
	}
	return &Store{pool: pool, q: newQueries(cfg.schema), ck: newCkptQueries(cfg.schema), gate: rowcodec.Gate{Pkg: pkg}, codec: cfg.codec, items: cfg.items}, nil
}

// Close makes the store unusable: later calls return [session.ErrClosed]
// (the state.Store methods an error wrapping it). A store made by [Open]
// also closes its pool, waiting for calls in flight; one made by [New]
// leaves the pool to its owner. Closing twice is not an error.
func (s *Store) Close() error {
	if !s.gate.Close() {
		return nil
	}
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// ItemCodec returns the codec the store keeps items with
// ([WithItemCodec]), or nil.
func (s *Store) ItemCodec() ItemCodec { return s.items }

// reader returns what decodes the items of one read of session sid.
func (s *Store) reader(ctx context.Context, sid, runID string) *rowcodec.Reader {
	return &rowcodec.Reader{Ctx: ctx, Codec: s.items, SessionID: sid, RunID: runID}
}

// List returns the session's items in order (by the run's place, then Seq);
// limit > 0 returns only the last limit items. It reads one consistent
// snapshot. An unknown session has no items.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return nil, err
	}
	var lim *int64 // NULL: no limit
	if limit > 0 {
		n := int64(limit)
		lim = &n
	}
	rows, err := s.pool.Query(ctx, s.q.list, sessionID, lim)
	if err != nil {
		return nil, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	out, err := collectItems(s.reader(ctx, sessionID, ""), rows)
	if err != nil {
		return nil, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	return out, nil
}

// ListBefore returns, in order, the session's items placed before the
// items of run runID, among those written before q.Stamp when it is > 0
// (see [session.Store]); q.Limit > 0 returns only the last Limit of them.
// One statement, one snapshot, served by the primary key from the run's
// place down.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return session.History{}, err
	}
	var lim *int64 // NULL: no limit
	if q.Limit > 0 {
		n := int64(q.Limit)
		lim = &n
	}
	stamp := q.Stamp
	if stamp <= 0 {
		stamp = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, s.q.listBefore, sessionID, runID, lim, stamp)
	if err != nil {
		return session.History{}, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	defer rows.Close()
	h, err := s.reader(ctx, sessionID, "").ScanHistory(rows)
	if err != nil {
		return session.History{}, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	return h, nil
}

// ReadChanges reads the session's items written at or after q.Since, or
// its last q.Limit items (see [session.ChangeQuery]), with the session's
// stamp, generation and run q.RunID's place: one statement, one snapshot.
// With Since it reads the index of the items' write stamps
// (session_items_stamps): O(the items written since).
func (s *Store) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	if err := s.gate.Begin(ctx, "read changes of", sessionID); err != nil {
		return session.Changes{}, err
	}
	query, arg := s.q.changesSince, any(q.Since)
	if q.Since <= 0 {
		query, arg = s.q.changesTail, nil // NULL: no limit
		if q.Limit > 0 {
			arg = int64(q.Limit)
		}
	}
	rows, err := s.pool.Query(ctx, query, sessionID, q.RunID, arg)
	if err != nil {
		return session.Changes{}, s.gate.Wrap(ctx, "read changes of", sessionID, err)
	}
	defer rows.Close()
	ch, err := s.reader(ctx, sessionID, "").ScanChanges(rows)
	if err != nil {
		return session.Changes{}, s.gate.Wrap(ctx, "read changes of", sessionID, err)
	}
	return ch, nil
}

func collectItems(rd *rowcodec.Reader, rows pgx.Rows) ([]state.Item, error) {
	defer rows.Close()
	var out []state.Item
	for rows.Next() {
		it, err := rd.ScanItemStamp(rows, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// Append stores items of run runID in one transaction: all or none. An
// item already stored at its (runID, Seq) is skipped; one that differs from
// the stored item (kind, tool name or JSON) rejects the whole call with
// [session.ErrConflict], and an output for a call that has one at another
// position (see [session.Store]; a unique index decides it, even between
// workers racing) with [session.ErrDuplicateOutput]. Empty IDs, a zero item
// or a Seq below 1 fail with [session.ErrInvalid]. The first append of a
// run fixes its place after every run already committed to the session,
// even when workers race; its
// later appends keep it. Appending no items stores nothing and fixes
// nothing. On a cancelled ctx nothing is written.
//
// Items in increasing Seq order (as the persistence middleware appends
// them) go in in one round trip: past position 1, of a run placed by an
// earlier append, with no read of their positions first (the session's
// shared lock, then the insert); otherwise, or where that cannot write
// (a retry of an append that committed, another item at a position, a
// run with no place), with one statement that reads them, one more round
// trip. If another writer placed the run or took a position after that
// statement read them, or the items are out of order, the append is a
// transaction of a few statements (two round trips or more).
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if err := s.gate.Begin(ctx, "append to", sessionID); err != nil {
		return err
	}
	if err := rowcodec.Validate(pkg, sessionID, runID, items); err != nil || len(items) == 0 {
		return err
	}
	a, err := s.newAppendCols(ctx, sessionID, runID, items)
	if err != nil {
		return s.gate.Wrap(ctx, "append to", sessionID, err)
	}
	inOrder := increasing(a.seqs)
	if inOrder && a.seqs[0] > 1 {
		// Items past position 1 follow an earlier append of the run,
		// which placed it: the common case, persistence's every commit
		// after a run's first. They go in with no read of their
		// positions (see placedAppend); whatever that cannot write
		// (the items stored already, by a retry; another item there; a
		// run whose place a Clear removed, or never had one) fails it,
		// and the append is made by the statement below, which reads.
		err := s.plainTrip(ctx,
			func(b *pgx.Batch) {
				b.Queue(s.q.lockShared, sessionID)
				placed, args := s.q.placed.of(a, sessionID, runID, 0)
				b.Queue(placed, args...)
			},
			func(br pgx.BatchResults) error {
				_, err := br.Exec()
				if _, aerr := br.Exec(); err == nil {
					err = aerr
				}
				return err
			})
		switch {
		case err == nil:
			return nil
		case !isTaken(err) && !isDuplicateOutput(err) && !isUnplaced(err):
			return s.gate.Wrap(ctx, "append to", sessionID, err)
		}
	}
	if inOrder {
		var differs int64
		err := s.plainTrip(ctx,
			func(b *pgx.Batch) {
				b.Queue(s.q.lockShared, sessionID)
				b.Queue(s.q.appendOne, a.args(sessionID, runID)...)
			},
			func(br pgx.BatchResults) error {
				if _, err := br.Exec(); err != nil {
					return err
				}
				return br.QueryRow().Scan(&differs)
			})
		switch {
		case err == nil && differs != 0:
			return s.differs(ctx, sessionID, runID, items, a.seqs, differs)
		case err == nil:
			return nil
		case isDuplicateOutput(err):
			return rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
		case !isTaken(err):
			return s.gate.Wrap(ctx, "append to", sessionID, err)
		}
	}
	return s.appendTx(ctx, sessionID, runID, items, a)
}

// appendTx is Append as a transaction of a few statements, which reads
// what another writer committed while it ran.
func (s *Store) appendTx(ctx context.Context, sessionID, runID string, items []state.Item, a appendCols) error {
	var (
		place    *int64
		inserted int64
		appErr   error
	)
	err := s.pipelinedTx(ctx, sessionID,
		func(b *pgx.Batch) { b.Queue(s.q.appendExisting, a.args(sessionID, runID)...) },
		func(br pgx.BatchResults) error {
			appErr = br.QueryRow().Scan(&place, &inserted)
			return nil // appendRest reports it, as it does for a first append's
		},
		func(tx txConn) error {
			return s.appendRest(ctx, tx, sessionID, runID, items, a, place, inserted, appErr)
		})
	return s.gate.Wrap(ctx, "append to", sessionID, err)
}

// increasing reports whether seqs strictly increase: the one-statement
// appends take no two items at one position.
func increasing(seqs []int64) bool {
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			return false
		}
	}
	return true
}

// appendCols are an append's items as the columns its statements take.
type appendCols struct {
	seqs       []int64
	kinds      []string
	names      []string
	raws       [][]byte
	callIDs    [][]byte
	batchCalls []*int64
}

// newAppendCols returns the columns of items of run runID, each item's
// JSON as the store keeps it (through its item codec, if any).
func (s *Store) newAppendCols(ctx context.Context, sessionID, runID string, items []state.Item) (appendCols, error) {
	a := appendCols{
		seqs:  make([]int64, len(items)),
		kinds: make([]string, len(items)),
		names: make([]string, len(items)),
		raws:  make([][]byte, len(items)),
	}
	for i, it := range items {
		a.seqs[i], a.kinds[i], a.names[i] = it.Seq(), it.Kind().String(), it.Name()
		if s.items == nil {
			a.raws[i] = it.AppendRaw(nil)
			continue
		}
		raw, err := s.items.SealItem(ctx, nil, sessionID, runID, it)
		if err != nil {
			return appendCols{}, fmt.Errorf("encode %s: %w", it, err)
		}
		a.raws[i] = raw
	}
	ids, batchCalls := rowcodec.Calls(items)
	a.callIDs = make([][]byte, len(ids))
	for i, id := range ids {
		if id != nil {
			a.callIDs[i] = []byte(*id)
		}
	}
	a.batchCalls = batchCalls
	return a, nil
}

// args are the arguments of appendExisting (and, after a place, of
// insertItems).
func (a appendCols) args(sessionID string, placeOrRun any) []any {
	return a.argsRoom(sessionID, placeOrRun, 0)
}

// paired reports whether the items, in increasing Seq order, are at
// consecutive positions and each output's call is among them
// (batchCalls), so that the output answers that call: the calls stored
// with its ID are all before the batch, since one between the call and
// the output would hold a position of the batch (and fail the insert on
// its key).
func (a appendCols) paired() bool {
	if n := len(a.seqs); n == 0 || a.seqs[n-1]-a.seqs[0] != int64(n-1) {
		return false
	}
	for _, c := range a.batchCalls {
		if c != nil && *c == 0 {
			return false
		}
	}
	return true
}

// appendArgsLen is the number of arguments args returns.
const appendArgsLen = 8

// argsRoom returns args with room for more arguments after them.
func (a appendCols) argsRoom(sessionID string, placeOrRun any, more int) []any {
	return append(make([]any, 0, appendArgsLen+more), sessionID, placeOrRun,
		int64s(a.seqs), texts(a.kinds), texts(a.names), byteas(a.raws), byteas(a.callIDs), optInt64s(a.batchCalls))
}

// int64s is a bigint[] argument whose elements pgx encodes with no
// allocation. Given a []int64, pgx boxes each element in an interface
// (pgtype.FlatArray), and boxing an int64 from 256 up allocates: every
// position and version of a run past its 128th turn cost an allocation.
// Here each element goes as a pointer (pgInt64), which boxes for free.
type int64s []int64

// Dimensions implements pgtype.ArrayGetter.
func (a int64s) Dimensions() []pgtype.ArrayDimension { return dims(len(a), a == nil) }

// Index implements pgtype.ArrayGetter.
func (a int64s) Index(i int) any { return (*pgInt64)(&a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a int64s) IndexType() any { return (*pgInt64)(nil) }

// rowArgs returns the arguments of a placed append of a's items as rows of
// a VALUES list (see placedAppend): the session and run, then each item's
// position, kind, name, JSON, call ID and the batch's call it answers, as
// pointers into a, which pgx encodes with no allocation (see pgInt64);
// with room for more arguments after them.
func (a appendCols) rowArgs(sessionID, runID string, more int) []any {
	args := make([]any, 0, 2+valuesRowArgs*len(a.seqs)+more)
	return a.itemArgs(append(args, sessionID, runID))
}

// itemArgs appends to args the items' arguments of a statement for their
// number: up to maxValuesRows as rows of six (see rowArgs), more as six
// arrays (see argsRoom).
func (a appendCols) itemArgs(args []any) []any {
	if len(a.seqs) > maxValuesRows {
		return append(args, int64s(a.seqs), texts(a.kinds), texts(a.names), byteas(a.raws), byteas(a.callIDs), optInt64s(a.batchCalls))
	}
	for i := range a.seqs {
		args = append(args, (*pgInt64)(&a.seqs[i]), (*pgText)(&a.kinds[i]), (*pgText)(&a.names[i]),
			(*pgBytes)(&a.raws[i]), (*pgBytes)(&a.callIDs[i]), (*pgInt64)(a.batchCalls[i]))
	}
	return args
}

// itemArgsLen is the number of arguments itemArgs appends.
func (a appendCols) itemArgsLen() int {
	if len(a.seqs) > maxValuesRows {
		return valuesRowArgs
	}
	return valuesRowArgs * len(a.seqs)
}

// texts, byteas and optInt64s are the text[], bytea[] and bigint[] (with
// NULLs) arguments of an append, whose elements pgx encodes with no
// allocation, as int64s: given a []string, a [][]byte or a []*int64, pgx
// boxes each string, or reflects on the slice and allocates for each
// element (17 of the 82 allocations of an append of three items).
type (
	texts     []string
	byteas    [][]byte
	optInt64s []*int64 // nil elements are NULL
)

// Dimensions implements pgtype.ArrayGetter.
func (a texts) Dimensions() []pgtype.ArrayDimension { return dims(len(a), a == nil) }

// Index implements pgtype.ArrayGetter.
func (a texts) Index(i int) any { return (*pgText)(&a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a texts) IndexType() any { return (*pgText)(nil) }

// Dimensions implements pgtype.ArrayGetter.
func (a byteas) Dimensions() []pgtype.ArrayDimension { return dims(len(a), a == nil) }

// Index implements pgtype.ArrayGetter.
func (a byteas) Index(i int) any { return (*pgBytes)(&a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a byteas) IndexType() any { return (*pgBytes)(nil) }

// Dimensions implements pgtype.ArrayGetter.
func (a optInt64s) Dimensions() []pgtype.ArrayDimension { return dims(len(a), a == nil) }

// Index implements pgtype.ArrayGetter: a nil element is a nil pointer,
// which pgx sends as NULL.
func (a optInt64s) Index(i int) any { return (*pgInt64)(a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a optInt64s) IndexType() any { return (*pgInt64)(nil) }

// dims are the dimensions of a one-dimensional array of n elements; a nil
// array has none, and is NULL.
func dims(n int, null bool) []pgtype.ArrayDimension {
	if null {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// pgText and pgBytes are a string and a byte slice that pgx encodes
// through a pointer to them (pgtype.TextValuer, pgtype.BytesValuer), as
// pgInt64; a nil pgBytes is NULL.
type (
	pgText  string
	pgBytes []byte
)

// TextValue implements pgtype.TextValuer.
func (v *pgText) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*v), Valid: true}, nil
}

// BytesValue implements pgtype.BytesValuer.
func (v *pgBytes) BytesValue() ([]byte, error) { return *v, nil }

// pgInt64 and pgInt are numbers that pgx encodes through a pointer to
// them (pgtype.Int64Valuer), with no allocation: an int64 or an int
// argument is boxed, and then encoded, allocating from 256 up (a run's
// versions and turns), and pgx's own dereference of an *int64 boxes the
// value again.
type (
	pgInt64 int64
	pgInt   int
)

// Int64Value implements pgtype.Int64Valuer.
func (v *pgInt64) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*v), Valid: true}, nil
}

// Int64Value implements pgtype.Int64Valuer.
func (v *pgInt) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*v), Valid: true}, nil
}

// appendRest finishes an append after appendExisting answered (place,
// inserted, err): it gives a run its place on its first append, and checks
// that the positions stored already hold the same items.
func (s *Store) appendRest(ctx context.Context, tx txConn, sessionID, runID string, items []state.Item, a appendCols, place *int64, inserted int64, err error) error {
	seqs := a.seqs
	if isDuplicateOutput(err) {
		return rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
	}
	if err != nil {
		return fmt.Errorf("insert items of run %q: %w", runID, err)
	}
	if place == nil { // the run's first append
		p, err := s.newPlace(ctx, tx, sessionID, runID)
		if err != nil {
			return err
		}
		var stamp int64
		if err := tx.QueryRow(ctx, s.q.takeStamp, sessionID).Scan(&stamp); err != nil {
			return fmt.Errorf("stamp items of run %q: %w", runID, err)
		}
		tag, err := tx.Exec(ctx, s.q.insertItems, append(a.args(sessionID, p), stamp)...)
		if isDuplicateOutput(err) {
			return rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
		}
		if err != nil {
			return fmt.Errorf("insert items of run %q: %w", runID, err)
		}
		place, inserted = &p, tag.RowsAffected()
	}
	if inserted == int64(len(items)) {
		return nil
	}
	// Some positions were stored already: each must hold the same item.
	rows, err := tx.Query(ctx, s.q.storedItems, sessionID, *place, seqs)
	if err != nil {
		return fmt.Errorf("read stored items of run %q: %w", runID, err)
	}
	type row struct {
		kind, name string
		raw        []byte
	}
	stored := make(map[int64]row, len(items))
	var r row
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&seq, &r.kind, &r.name, &r.raw}, func() error {
		stored[seq] = r
		return nil
	})
	if err != nil {
		return fmt.Errorf("read stored items of run %q: %w", runID, err)
	}
	for _, it := range items {
		r, ok := stored[it.Seq()]
		// !ok cannot happen: the position conflicted, so it is stored.
		same, err := s.same(ctx, sessionID, runID, it, r.kind, r.name, r.raw)
		if err != nil {
			return fmt.Errorf("read stored %s: %w", it, err)
		}
		if !ok || !same {
			return rowcodec.Conflict(pkg, sessionID, runID, it, r.kind)
		}
	}
	return nil
}

// same reports whether it is the item stored as (kind, name, stored),
// opened through the store's item codec when it has one.
func (s *Store) same(ctx context.Context, sid, runID string, it state.Item, kind, name string, stored []byte) (bool, error) {
	if s.items == nil {
		return rowcodec.Same(it, kind, name, stored), nil
	}
	if it.Kind().String() != kind || it.Name() != name {
		return false, nil
	}
	opened, err := s.reader(ctx, sid, runID).Decode(kind, it.Seq(), name, stored)
	return err == nil && opened.Equal(it), err
}

// differs returns the conflict of an append of items (with positions
// seqs) whose one statement found another item at position seq and wrote
// nothing.
func (s *Store) differs(ctx context.Context, sessionID, runID string, items []state.Item, seqs []int64, seq int64) error {
	var kind string
	if stored, ok, err := s.Lookup(ctx, sessionID, runID, seq); err == nil && ok {
		kind = stored.Kind().String()
	}
	return rowcodec.Conflict(pkg, sessionID, runID, items[slices.Index(seqs, seq)], kind)
}

// isTaken reports whether err is a one-statement append's insert of a
// run's place or an item's position that a transaction committed after the
// statement's snapshot (see appendWrites).
func isTaken(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "23505" &&
		(pe.ConstraintName == "session_items_pkey" || pe.ConstraintName == "session_runs_pkey")
}

// isUnplaced reports whether err is a placed append's failure
// (placedAppend) for a run with no place in the session, or a session
// with no head: a NULL place or write stamp.
func isUnplaced(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "23502" && pe.TableName == "session_items" &&
		(pe.ColumnName == "place" || pe.ColumnName == "stamp")
}

// isDuplicateOutput reports whether err is a violation of the index that
// keeps one output per call.
func isDuplicateOutput(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "23505" && pe.ConstraintName == "session_items_answers"
}

// newPlace gives the run the session's next place, or returns the place a
// worker racing with this one gave it first. The caller holds the session's
// shared lock.
func (s *Store) newPlace(ctx context.Context, tx txConn, sessionID, runID string) (int64, error) {
	var place int64
	err := tx.QueryRow(ctx, s.q.newRun, sessionID, runID).Scan(&place)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another worker placed the run first and has committed.
		err = tx.QueryRow(ctx, s.q.runPlace, sessionID, runID).Scan(&place)
	}
	if err != nil {
		return 0, fmt.Errorf("place run %q: %w", runID, err)
	}
	return place, nil
}

// Lookup returns the item stored at (runID, seq) in the session, if any.
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "lookup in", sessionID); err != nil {
		return state.Item{}, false, err
	}
	it, err := s.reader(ctx, sessionID, runID).ScanItemStamp(s.pool.QueryRow(ctx, s.q.lookup, sessionID, runID, seq), nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.Item{}, false, nil
	}
	if err != nil {
		return state.Item{}, false, s.gate.Wrap(ctx, "lookup in", sessionID, err)
	}
	return it, true, nil
}

// Pop removes and returns the session's last item, if any, in one
// transaction, holding the session's lock as Clear does: it waits for the
// appends in flight, and they for it. The item's run keeps its place.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "pop from", sessionID); err != nil {
		return state.Item{}, false, err
	}
	for {
		var it state.Item
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			// Exclusive, as Clear's: an append reads the session's
			// positions after its shared lock, so one in flight sees the
			// item gone, or the item is popped after it commits; a retry
			// then does not skip an item a Pop removed under it.
			if _, err := tx.Exec(ctx, s.q.lockSession, sessionID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.q.bumpGen, sessionID); err != nil {
				return err
			}
			var err error
			it, err = s.reader(ctx, sessionID, "").ScanItemStamp(tx.QueryRow(ctx, s.q.pop, sessionID), nil)
			return err // none popped: the generation stays
		})
		if errors.Is(err, pgx.ErrNoRows) {
			// Either the session is empty, or a concurrent Pop took the
			// row this one locked; only the first is the answer.
			var one int
			err := s.pool.QueryRow(ctx, s.q.hasItems, sessionID).Scan(&one)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return state.Item{}, false, s.gate.Wrap(ctx, "pop from", sessionID, err)
			}
			if err != nil { // no rows: the session is empty
				return state.Item{}, false, nil
			}
			continue
		}
		if err != nil {
			return state.Item{}, false, s.gate.Wrap(ctx, "pop from", sessionID, err)
		}
		return it, true, nil
	}
}

// Clear removes every item of the session and the places of its runs, in
// one transaction: a run that appends afterwards starts a new place. An
// append in flight either lands before the clear (and is removed) or after
// it (and starts afresh).
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	if err := s.gate.Begin(ctx, "clear", sessionID); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The exclusive lock waits for appends in flight to commit; the
		// deletes then see what they wrote.
		for _, q := range []string{s.q.lockSession, s.q.clearHead, s.q.clearRuns, s.q.clearItems, s.q.clearIndex} {
			if _, err := tx.Exec(ctx, q, sessionID); err != nil {
				return err
			}
		}
		return nil
	})
	return s.gate.Wrap(ctx, "clear", sessionID, err)
}
