package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

const pkg = "sqlite"

var (
	_ session.Store        = (*Store)(nil)
	_ session.ChangeReader = (*Store)(nil)
)

// A Store keeps sessions (and run checkpoints, see [Store.Save]) in one
// SQLite file. It is safe for concurrent use by multiple goroutines, and by
// several processes that open the same file: every write is one immediate
// transaction, and a writer waits up to the busy timeout for another
// process's lock.
type Store struct {
	db    *sql.DB
	write chan struct{} // one writer at a time in this process: no busy-polling
	gate  rowcodec.Gate
	codec rowcodec.Codec // signing and verification of checkpoints
	ck    *ckptStmts     // checkpoint statements on the pool, for the reads (checkpoint.go)
	w     *writer        // the connection the writes run on (writer.go)
	reads *readStmts     // the reads' statements
	items ItemCodec      // the stored form of items, or nil: canonical JSON
}

// ItemCodec returns the codec the store keeps items with
// ([WithItemCodec]), or nil.
func (s *Store) ItemCodec() ItemCodec { return s.items }

// reader returns the decoder of one read of session sid.
func (s *Store) reader(ctx context.Context, sid, runID string) rowcodec.Reader {
	return rowcodec.Reader{Ctx: ctx, Codec: s.items, SessionID: sid, RunID: runID}
}

// appendStmts are a store's statements of an append, prepared when the
// store opens: the take of the write stamp (sqlTakeStamp), the placing of
// a run at its first append (sqlNewRun: once a message in a chat) and the
// one-statement appends (sqlInsertJoinHead) of the batch sizes joinSQL
// holds, and the removals' statements (sqlRemoval, which Pop and Clear
// run first, and sqlPop). SQLite parses such a statement in more time
// than it takes to run it. Not on first use: an append would prepare
// inside its transaction, and with one connection (WithMaxConns(1)) wait
// for itself.
type appendStmts struct {
	takeStamp *sql.Stmt
	newRun    *sql.Stmt // a run's place, at its first append
	joins     [len(joinSQL)]*sql.Stmt
	removal   *sql.Stmt // a removal's first statement: the stamps' floor and the generation
	pop       *sql.Stmt
}

// prepareAppends prepares the statements of an append on db, the
// writer's connection.
func prepareAppends(ctx context.Context, db preparer) (*appendStmts, error) {
	c := &appendStmts{}
	var err error
	if c.takeStamp, err = db.PrepareContext(ctx, sqlTakeStamp); err != nil {
		return nil, fmt.Errorf("prepare the take of a write stamp: %w", err)
	}
	if c.newRun, err = db.PrepareContext(ctx, sqlNewRun); err != nil {
		c.close()
		return nil, fmt.Errorf("prepare the placing of a run: %w", err)
	}
	if c.removal, err = db.PrepareContext(ctx, sqlRemoval); err != nil {
		c.close()
		return nil, fmt.Errorf("prepare the removal's stamps: %w", err)
	}
	if c.pop, err = db.PrepareContext(ctx, sqlPop); err != nil {
		c.close()
		return nil, fmt.Errorf("prepare the pop of an item: %w", err)
	}
	for n := 1; n < len(c.joins); n++ {
		st, err := db.PrepareContext(ctx, joinSQL[n])
		if err != nil {
			c.close()
			return nil, fmt.Errorf("prepare the append of %d items: %w", n, err)
		}
		c.joins[n] = st
	}
	return c, nil
}

// join returns the prepared one-statement append of n items, or nil for
// a batch larger than any prepared.
func (c *appendStmts) join(n int) *sql.Stmt {
	if n >= len(c.joins) {
		return nil
	}
	return c.joins[n]
}

// close closes the statements prepared.
func (c *appendStmts) close() {
	if c.takeStamp != nil {
		c.takeStamp.Close()
		c.takeStamp = nil
	}
	for _, st := range []**sql.Stmt{&c.newRun, &c.removal, &c.pop} {
		if *st != nil {
			(*st).Close()
			*st = nil
		}
	}
	for i, st := range c.joins {
		if st != nil {
			st.Close()
			c.joins[i] = nil
		}
	}
}

// readStmts are a store's statements of reads, prepared when the store
// opens: those a run makes before its first turn (the history before it,
// a cached session's changes), a lookup, a list, and the inspector's
// pages. A statement run as SQL text is parsed and planned at each call,
// which cost a ListBefore of 10 items in a session of 1 000 four times
// what running the prepared statement does (BenchmarkRead, callgrind:
// 1 134 282 instructions a call against 287 708).
type readStmts struct {
	list, listBefore, changesSince, changesTail, lookup *sql.Stmt
	page, listSessions, searchSessions                  *sql.Stmt
}

// prepareReads prepares the statements of the reads on db.
func prepareReads(ctx context.Context, db *sql.DB) (*readStmts, error) {
	c := &readStmts{}
	for _, st := range []struct {
		dst  **sql.Stmt
		name string
		sql  string
	}{
		{&c.list, "the list of a session", sqlList},
		{&c.listBefore, "the list before a run", sqlListBefore},
		{&c.changesSince, "the read of changes since a stamp", sqlChangesSince},
		{&c.changesTail, "the read of a session's tail", sqlChangesTail},
		{&c.lookup, "the lookup of an item", sqlLookup},
		{&c.page, "the page of a session's items", sqlPage},
		{&c.listSessions, "the list of sessions", sqlListSessions},
		{&c.searchSessions, "the search of sessions", sqlSearchSessions},
	} {
		var err error
		if *st.dst, err = db.PrepareContext(ctx, st.sql); err != nil {
			c.close()
			return nil, fmt.Errorf("prepare %s: %w", st.name, err)
		}
	}
	return c, nil
}

// close closes the statements prepared.
func (c *readStmts) close() {
	for _, st := range []**sql.Stmt{&c.list, &c.listBefore, &c.changesSince, &c.changesTail, &c.lookup, &c.page, &c.listSessions, &c.searchSessions} {
		if *st != nil {
			(*st).Close()
			*st = nil
		}
	}
}

// Open opens (creating it if needed) the SQLite database at path, switches
// it to WAL, and brings its schema up to date with the embedded migrations
// (see [Migrate]; with [WithoutMigrations] it only checks the schema).
// path is a file name; it must not contain '?'. The returned store owns the
// file's connections; call [Store.Close] to release them.
//
// Open fails with a [*SchemaError] wrapping [ErrSchemaVersion] if a newer
// version of this package migrated the file, or, opened
// [WithoutMigrations], wrapping [ErrNotMigrated] if its schema is behind.
func Open(path string, opts ...Option) (*Store, error) {
	cfg := newConfig(opts)
	db, err := openDB(path, cfg)
	if err != nil {
		return nil, err
	}
	prepare := migrate
	if cfg.noMigrate {
		prepare = checkSchema
	}
	if err := prepare(context.Background(), db, path); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	ck, err := prepareCheckpoints(context.Background(), db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	w, err := openWriter(context.Background(), db)
	if err != nil {
		ck.close()
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	reads, err := prepareReads(context.Background(), db)
	if err != nil {
		w.close()
		ck.close()
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return &Store{db: db, write: make(chan struct{}, 1), gate: rowcodec.Gate{Pkg: pkg}, codec: cfg.codec, ck: ck, w: w, reads: reads, items: cfg.items}, nil
}

// openDB opens the database at path with the store's settings: WAL,
// immediate write transactions, the busy timeout and the pool size.
func openDB(path string, cfg config) (*sql.DB, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: open %q: the path must be a non-empty file name without '?'", path)
	}
	dsn := path + "?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1" +
		"&_busy_timeout=" + strconv.FormatInt(cfg.busyTimeout.Milliseconds(), 10)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	// The readers' connections and the writer's (writer.go).
	db.SetMaxOpenConns(cfg.maxConns + 1)
	db.SetMaxIdleConns(cfg.maxConns + 1)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// Close closes the database. Calls after Close return [session.ErrClosed]
// (or, for the state.Store methods, an error wrapping it); closing twice is
// not an error. Calls in flight when Close is called fail with
// [session.ErrClosed] or finish.
func (s *Store) Close() error {
	if !s.gate.Close() {
		return nil
	}
	// The write in flight, if any, ends first; a write waiting for its
	// turn then finds the store closed (lockWrite).
	s.write <- struct{}{}
	s.w.close()
	<-s.write
	s.ck.close()
	s.reads.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// lockWrite takes this process's write turn, or fails when ctx is done.
func (s *Store) lockWrite(ctx context.Context) error {
	select {
	case s.write <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.gate.Closed() { // Close took the writer away while this waited
		<-s.write
		return session.ErrClosed
	}
	return nil
}

func (s *Store) unlockWrite() { <-s.write }

// List returns the session's items in order (by the run's place, then Seq);
// limit > 0 returns only the last limit items. It reads one consistent
// snapshot. An unknown session has no items.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	return s.listItems(ctx, sessionID, s.reads.list, sessionID, limit)
}

// ListBefore returns, in order, the session's items placed before the
// items of run runID, among those written before q.Stamp when it is > 0
// (see [session.Store]); q.Limit > 0 returns only the last Limit of them.
// One statement, one consistent snapshot, served by the primary key from
// the run's place down.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	limit, stamp := int64(q.Limit), q.Stamp
	if limit <= 0 {
		limit = -1 // no limit
	}
	if stamp <= 0 {
		stamp = math.MaxInt64
	}
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return session.History{}, err
	}
	rows, err := s.reads.listBefore.QueryContext(ctx, sessionID, runID, limit, stamp)
	if err != nil {
		return session.History{}, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	defer rows.Close()
	rd := s.reader(ctx, sessionID, "")
	h, err := rd.ScanHistory(rows)
	if err != nil {
		return session.History{}, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	return h, nil
}

// ReadChanges reads the session's items written at or after q.Since, or
// its last q.Limit items (see [session.ChangeQuery]), with the session's
// stamp, generation and run q.RunID's place: one statement, one snapshot.
// With Since it reads the index of the items written behind the session's
// last item (session_items_behind) and walks the session's items back
// from its last to the first written before Since: O(the items written
// since).
func (s *Store) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	if err := s.gate.Begin(ctx, "read changes of", sessionID); err != nil {
		return session.Changes{}, err
	}
	query, arg := s.reads.changesSince, q.Since
	if q.Since <= 0 {
		query, arg = s.reads.changesTail, int64(q.Limit)
		if q.Limit <= 0 {
			arg = -1 // no limit
		}
	}
	rows, err := query.QueryContext(ctx, sessionID, q.RunID, arg)
	if err != nil {
		return session.Changes{}, s.gate.Wrap(ctx, "read changes of", sessionID, err)
	}
	defer rows.Close()
	rd := s.reader(ctx, sessionID, "")
	ch, err := rd.ScanChanges(rows)
	if err != nil {
		return session.Changes{}, s.gate.Wrap(ctx, "read changes of", sessionID, err)
	}
	return ch, nil
}

// listItems runs a query of items of session sessionID and decodes them.
func (s *Store) listItems(ctx context.Context, sessionID string, query *sql.Stmt, args ...any) ([]state.Item, error) {
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return nil, err
	}
	rows, err := query.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	defer rows.Close()
	var out []state.Item
	rd := s.reader(ctx, sessionID, "")
	for rows.Next() {
		it, err := rd.ScanItemStamp(rows, nil)
		if err != nil {
			return nil, s.gate.Wrap(ctx, "list", sessionID, err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, s.gate.Wrap(ctx, "list", sessionID, err)
	}
	return out, nil
}

// Append stores items of run runID in one immediate transaction: all or
// none. An item already stored at its (runID, Seq) is skipped; one that
// differs from the stored item (kind, tool name or JSON) rejects the whole
// call with [session.ErrConflict], and an output for a call that has one
// at another position (see [session.Store]) with
// [session.ErrDuplicateOutput]. Empty IDs, a zero item or a Seq below 1
// fail with [session.ErrInvalid]. The first append of a run fixes its place
// after every run already in the session; appending no items stores
// nothing and fixes nothing. On a cancelled ctx nothing is written.
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if err := s.gate.Begin(ctx, "append to", sessionID); err != nil {
		return err
	}
	if err := rowcodec.Validate(pkg, sessionID, runID, items); err != nil || len(items) == 0 {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.Wrap(ctx, "append to", sessionID, err)
	}
	defer s.unlockWrite()
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Conn) error { return s.append(ctx, tx, sessionID, runID, items) })
	return s.gate.Wrap(ctx, "append to", sessionID, err)
}

// append stores items in tx. A batch of up to len(joinSQL)-1 items to a
// run that has its place, all of them new, is one statement
// (joinItems); one that inserts fewer rows than it has items (a new
// run, which joins no row, or a retry) takes the run's place, placing
// the run first if it has none, and tries again, then checks what was
// stored already. A larger batch takes the stamp and the place first and
// inserts in chunks (insertItems).
func (s *Store) append(ctx context.Context, tx *sql.Conn, sessionID, runID string, items []state.Item) error {
	callIDs, batchCalls := rowcodec.Calls(items)
	join := s.w.ins.join(len(items))
	inserted := 0
	if join != nil {
		n, err := s.joinItems(ctx, join, sessionID, runID, items, callIDs, batchCalls)
		if err != nil {
			return err
		}
		if n == len(items) {
			return nil
		}
		inserted = n
	}
	var (
		stamp int64
		known sql.NullInt64
		place int64
	)
	err := s.w.ins.takeStamp.QueryRowContext(ctx, sessionID, runID).Scan(&stamp, &known)
	if err == nil && known.Valid {
		place = known.Int64
	} else if err == nil {
		err = s.w.ins.newRun.QueryRowContext(ctx, sessionID, runID, sessionID).Scan(&place)
		if err == nil && place == 1 { // the session's first run: list the session
			_, err = tx.ExecContext(ctx, sqlSessionFile, sessionID)
		}
	}
	if err != nil {
		return fmt.Errorf("place run %q: %w", runID, err)
	}
	if join != nil && !known.Valid {
		// The run is placed now: the same statement joins its row.
		if inserted, err = s.joinItems(ctx, join, sessionID, runID, items, callIDs, batchCalls); err != nil {
			return err
		}
	}
	for i := 0; join == nil && i < len(items); i += maxRowsPerInsert {
		j := min(i+maxRowsPerInsert, len(items))
		n, err := s.insertItems(ctx, tx, sessionID, runID, place, stamp, items[i:j], callIDs[i:j], batchCalls[i:j])
		if isDuplicateOutput(err) {
			return rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
		}
		if err != nil {
			return err
		}
		inserted += n
	}
	if inserted < len(items) {
		// Some positions were stored already: a retry is a no-op there, a
		// different item a conflict.
		for _, it := range items {
			var kind, name string
			var stored []byte
			if err := tx.QueryRowContext(ctx, sqlStoredItem, sessionID, place, it.Seq()).Scan(&kind, &name, &stored); err != nil {
				return fmt.Errorf("read stored %s: %w", it, err)
			}
			same, err := s.same(ctx, sessionID, runID, it, kind, name, stored)
			if err != nil {
				return fmt.Errorf("read stored %s: %w", it, err)
			}
			if !same {
				return rowcodec.Conflict(pkg, sessionID, runID, it, kind)
			}
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
	rd := s.reader(ctx, sid, runID)
	opened, err := rd.Decode(kind, it.Seq(), name, stored)
	return err == nil && opened.Equal(it), err
}

// joinItems runs join, the one-statement append of items (of
// len(items)), and returns how many rows it inserted: none when run runID
// has no place. callIDs and batchCalls are [rowcodec.Calls] of the items.
func (s *Store) joinItems(ctx context.Context, join *sql.Stmt, sessionID, runID string, items []state.Item, callIDs []*string, batchCalls []*int64) (int, error) {
	args := make([]any, 0, 6*len(items)+6)
	sid := any(sessionID)
	args = append(args, sid, sid, sid, sid)
	raws := s.rawBuf(items, runID)
	var err error
	for i, it := range items {
		var raw []byte
		if raws, raw, err = s.nextRaw(ctx, raws, sessionID, runID, it); err != nil {
			return 0, err
		}
		callID, batchCall := callArgs(callIDs[i], batchCalls[i])
		args = append(args, it.Seq(), kindArg(it.Kind()), it.Name(), raw, callID, batchCall)
	}
	args = append(args, sid, runID)
	res, err := join.ExecContext(ctx, args...)
	if isDuplicateOutput(err) {
		return 0, rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
	}
	if err != nil {
		return 0, fmt.Errorf("insert items: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert items: %w", err)
	}
	return int(n), nil
}

// nextRaw appends the stored form of it to raws and returns the buffer
// and the item's bytes in it: a slice of the buffer as it is now, capped,
// so a later growth leaves those bytes where they are.
func (s *Store) nextRaw(ctx context.Context, raws []byte, sessionID, runID string, it state.Item) ([]byte, []byte, error) {
	start := len(raws)
	raws, err := s.appendRaw(ctx, raws, sessionID, runID, it)
	if err != nil {
		return raws, nil, err
	}
	return raws, raws[start:len(raws):len(raws)], nil
}

// maxRowsPerInsert keeps an insert's bound parameters (17 per row) under
// SQLite's limit of 32766.
const maxRowsPerInsert = 1000

// insertItems, the insert of a batch larger than joinSQL's (in chunks of
// maxRowsPerInsert), inserts items at the run's place in one statement, skipping
// positions already taken, with the append's write stamp, and returns how
// many rows it inserted. callIDs
// and batchCalls are [rowcodec.Calls] of the items: an output's answers
// column is the latest call with its ID before it, in the batch or stored
// (an index lookup, made for outputs only: see sqlInsertRow); the unique
// index session_items_call_ids refuses a second output for one call.
func (s *Store) insertItems(ctx context.Context, tx *sql.Conn, sessionID, runID string, place, stamp int64, items []state.Item, callIDs []*string, batchCalls []*int64) (int, error) {
	// Each value is boxed once, however often the statement binds it.
	args := make([]any, 0, 17*len(items))
	sid, pl, st := any(sessionID), any(place), any(stamp)
	raws := s.rawBuf(items, runID)
	var err error
	for i, it := range items {
		var raw []byte
		if raws, raw, err = s.nextRaw(ctx, raws, sessionID, runID, it); err != nil {
			return 0, err
		}
		callID, batchCall := callArgs(callIDs[i], batchCalls[i])
		seq := any(it.Seq())
		args = append(args, sid, pl, seq, kindArg(it.Kind()), it.Name(), raw, callID, st,
			batchCall, batchCall, sid, pl, callID, seq, sid, pl, seq)
	}
	res, err := tx.ExecContext(ctx, insertItemsSQL(len(items)), args...)
	if err != nil {
		return 0, fmt.Errorf("insert items: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert items: %w", err)
	}
	return int(n), nil
}

// kindArgs are the kinds' names boxed once, as an insert binds them.
var kindArgs = func() (a []any) {
	for k := state.Kind(0); k == 0 || k.Valid(); k++ {
		a = append(a, k.String())
	}
	return a
}()

// kindArg returns k's name as an insert binds it.
func kindArg(k state.Kind) any {
	if int(k) < len(kindArgs) {
		return kindArgs[k]
	}
	return k.String()
}

// rawBuf returns the buffer an insert's items' stored JSON goes in, one
// after the other: one allocation for the batch rather than one per
// item (their canonical JSON's length, or with an item codec a bound of
// the sealed form's: session/encrypt's binary form, the JSON with the run
// ID and at most 48 bytes around them).
func (s *Store) rawBuf(items []state.Item, runID string) []byte {
	n := 0
	for _, it := range items {
		n += it.RawLen()
	}
	if s.items != nil {
		n += (48 + len(runID)) * len(items)
	}
	return make([]byte, 0, n)
}

// appendRaw appends the stored JSON of it, an item of run runID, to buf:
// its canonical JSON, or what the item codec makes of it.
func (s *Store) appendRaw(ctx context.Context, buf []byte, sid, runID string, it state.Item) ([]byte, error) {
	if s.items == nil {
		return it.AppendRaw(buf), nil
	}
	buf, err := s.items.SealItem(ctx, buf, sid, runID, it)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", it, err)
	}
	return buf, nil
}

// callArgs returns an item's call columns, as [rowcodec.Calls] gives them,
// as an insert binds them: nil (NULL) where they are not set.
func callArgs(callID *string, batchCall *int64) (id, batch any) {
	if callID != nil {
		id = *callID
	}
	if batchCall != nil {
		batch = *batchCall
	}
	return id, batch
}

// isDuplicateOutput reports whether err is a violation of the index that
// keeps one output per call (an index of expressions, which SQLite's
// message names).
func isDuplicateOutput(err error) bool {
	return err != nil && strings.Contains(err.Error(), "index 'session_items_call_ids'")
}

// Lookup returns the item stored at (runID, seq) in the session, if any.
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "lookup in", sessionID); err != nil {
		return state.Item{}, false, err
	}
	rd := s.reader(ctx, sessionID, runID)
	it, err := rd.ScanItemStamp(s.reads.lookup.QueryRowContext(ctx, sessionID, runID, seq), nil)
	if errors.Is(err, sql.ErrNoRows) {
		return state.Item{}, false, nil
	}
	if err != nil {
		return state.Item{}, false, s.gate.Wrap(ctx, "lookup in", sessionID, err)
	}
	return it, true, nil
}

// Pop removes and returns the session's last item, if any, and moves the
// session's generation on (see [session.Changes]), in one transaction.
// The item's run keeps its place.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "pop from", sessionID); err != nil {
		return state.Item{}, false, err
	}
	if err := s.lockWrite(ctx); err != nil {
		return state.Item{}, false, s.gate.Wrap(ctx, "pop from", sessionID, err)
	}
	defer s.unlockWrite()
	rd := s.reader(ctx, sessionID, "")
	var it state.Item
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Conn) error {
		_, err := s.w.ins.removal.ExecContext(ctx, sessionID) // before the pop: the stamps' floor and the generation
		if err != nil {
			return err
		}
		it, err = rd.ScanItemStamp(s.w.ins.pop.QueryRowContext(ctx, sessionID), nil)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return state.Item{}, false, nil
	}
	if err != nil {
		return state.Item{}, false, s.gate.Wrap(ctx, "pop from", sessionID, err)
	}
	return it, true, nil
}

// Clear removes every item of the session and the places of its runs, in
// one transaction: a run that appends afterwards starts a new place. The
// session's write stamps go on from where they were.
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	if err := s.gate.Begin(ctx, "clear", sessionID); err != nil {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.Wrap(ctx, "clear", sessionID, err)
	}
	defer s.unlockWrite()
	// The removal of every item of a long session is left to the caller's
	// context, which interrupts it, not to inTx's.
	return s.gate.Wrap(ctx, "clear", sessionID, s.inTx(ctx, func(_ context.Context, tx *sql.Conn) error {
		if _, err := s.w.ins.removal.ExecContext(ctx, sessionID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlClearItems, sessionID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlClearRuns, sessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, sqlSessionUnfile, sessionID)
		return err
	}))
}

// unwatched returns ctx without its cancellation, or ctx itself when it
// has none to take away (context.WithoutCancel allocates its wrapper).
func unwatched(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
