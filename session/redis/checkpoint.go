package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

var _ state.Store = (*Store)(nil)

func (s *Store) storeErr(ctx context.Context, op, runID string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		err = session.ErrClosed
	}
	return s.gate.WrapRun(ctx, op, runID, err)
}

// checkpointLua holds the functions the save scripts share. KEYS (k): the
// run's head hash, items hash and context (see [Store.runKeys]). ARGV (a):
// the base version (0: none stored), the new version, "1" if the save is
// full, the head, "1" if the context is replaced, the context, then (Seq,
// item JSON) pairs from index first to last.
//
// cas returns -1 if the stored version is the base, else the stored
// version. write applies the delta: a full one first removes the stored
// items and context; the head and version are replaced; each item is
// stored as "<version>:<JSON>" under its Seq. It costs O(the delta).
const checkpointLua = `
local function cas(k, a)
	local stored = tonumber(redis.call('HGET', k[1], 'v') or '0')
	if stored ~= tonumber(a[1]) then return stored end
	return -1
end
local function write(k, a, first, last)
	if a[3] == '1' then redis.call('DEL', k[2], k[3]) end
	redis.call('HSET', k[1], 'v', a[2], 'd', a[4])
	if a[5] == '1' then redis.call('SET', k[3], a[6]) end
	local tag = a[2] .. ':'
	for i = first, last, 2 do
		redis.call('HSET', k[2], a[i], tag .. a[i + 1])
	end
end
`

// saveScript applies a delta if the stored version is its base (see
// checkpointLua; the items run from ARGV[7] to the end). It returns -1 on
// success, or the stored version on a conflict, having written nothing.
var saveScript = goredis.NewScript(checkpointLua + `
local stored = cas(KEYS, ARGV)
if stored ~= -1 then return stored end
write(KEYS, ARGV, 7, #ARGV)
return -1
`)

// saveAppendScript applies a delta and appends to a session, both or
// neither. KEYS: the run's three keys, then the session's three (see
// appendScript). ARGV: the delta's as for saveScript up to the context,
// then the number n of items of the delta, its 2n (Seq, JSON) values, then
// appendScript's ARGV (run ID, then (Seq, item) pairs). It returns {0} on
// success, {1, stored version} on a version conflict and {2, what
// appendScript returned} when the append is refused; then nothing is
// written.
var saveAppendScript = goredis.NewScript(checkpointLua +
	"local function sessionAppend(KEYS, ARGV)\n" + appendLua + "\nend\n" + `
local stored = cas(KEYS, ARGV)
if stored ~= -1 then return {1, stored} end
local last = 7 + 2 * tonumber(ARGV[7])
local sargv = {}
for i = last + 1, #ARGV do sargv[#sargv + 1] = ARGV[i] end
local res = sessionAppend({KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}, sargv)
if res ~= 0 then return {2, res} end
write(KEYS, ARGV, 8, last)
return {0}
`)

// delta returns what saving run writes, encoded with the store's codec.
func (s *Store) delta(run *state.Run) (*state.Delta, error) {
	if run == nil || run.ID() == "" {
		return nil, &state.StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	d, err := run.Delta(s.codec.Marshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	return d, nil
}

// deltaArgs appends d's ARGV (see checkpointLua) to args; with counted set,
// the number of its items goes before them (saveAppendScript).
func deltaArgs(args []any, d *state.Delta, counted bool) []any {
	full, hasCtx := "0", "0"
	if d.Full {
		full = "1"
	}
	if d.Context != nil {
		hasCtx = "1"
	}
	args = append(args, d.Base, d.Version, full, d.Head, hasCtx, d.Context)
	if counted {
		args = append(args, len(d.Items))
	}
	for _, p := range d.Items {
		args = append(args, p.Seq, p.Data)
	}
	return args
}

// Load returns the run's checkpoint, a new [state.Run] with its stored
// version set, or a [*state.StoreError] wrapping [state.ErrNotFound]. It
// reads the head, the context and the items in one MULTI/EXEC (one round
// trip, one consistent snapshot) and rebuilds the run with
// [state.Assemble]. A checkpoint an earlier version of this package wrote
// (a whole checkpoint in the head hash) loads as it is; its next save is a
// full one.
//
// A checkpoint that refers to the session history its run started from
// ([state.Run.SetSessionHistory]) gets it from the store's own sessions
// with one more read ([Store.ListBefore]), so the run comes back whole;
// if the session no longer holds that history the run's history stays
// pending, and resuming it fails with [state.ErrHistoryChanged].
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	if err := s.gate.BeginRun(ctx, "load", runID); err != nil {
		return nil, err
	}
	keys := s.runKeys(runID)
	var (
		head  *goredis.SliceCmd
		cx    *goredis.StringCmd
		items *goredis.MapStringStringCmd
	)
	_, err := s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		head = p.HMGet(ctx, keys[0], "v", "d")
		cx = p.Get(ctx, keys[2])
		items = p.HGetAll(ctx, keys[1])
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) { // a missing context is nil
		return nil, s.storeErr(ctx, "load", runID, err)
	}
	vals := head.Val()
	if len(vals) != 2 || vals[0] == nil || vals[1] == nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	vs, _ := vals[0].(string)
	data, _ := vals[1].(string)
	version, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return nil, malformed(runID, "version %q", vs)
	}
	var context []byte
	if c, err := cx.Result(); err == nil {
		context = []byte(c)
	} else if !errors.Is(err, goredis.Nil) {
		return nil, s.storeErr(ctx, "load", runID, err)
	}
	stored, err := items.Result()
	if err != nil {
		return nil, s.storeErr(ctx, "load", runID, err)
	}
	pieces := make([]state.Piece, 0, len(stored))
	for field, val := range stored {
		seq, err1 := strconv.ParseInt(field, 10, 64)
		v, item, ok := strings.Cut(val, ":")
		pv, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || !ok {
			return nil, malformed(runID, "item %q", field)
		}
		pieces = append(pieces, state.Piece{Seq: seq, Version: pv, Data: []byte(item)})
	}
	run, err := state.Assemble([]byte(data), context, pieces, s.codec.Unmarshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	if run.Version() != version {
		// A whole checkpoint of the earlier format holds the version
		// before its save; the hash holds the stored one.
		run.SetVersion(version)
	}
	if err := rowcodec.ResolveHistory(ctx, s, run); err != nil {
		return nil, err
	}
	return run, nil
}

// malformed is the error for a stored checkpoint whose layout is broken.
func malformed(runID, format string, args ...any) error {
	return &state.StoreError{Op: "load", RunID: runID, Err: &state.DecodeError{Path: "$",
		Err: fmt.Errorf("%w: redis: stored "+format, append([]any{state.ErrMalformed}, args...)...)}}
}

// Save writes what changed in run since it was last loaded or saved (a
// [state.Delta]) if the stored version equals run.Version() (0: none
// stored), checking and writing in one Lua script, and then records the
// save on run ([state.Run.Saved]). It writes the head and the new items,
// and the context when it changed: O(the new items), whatever the run's
// history. Otherwise it returns a [*state.StoreError] wrapping
// [state.ErrConflict] and changes nothing: of two workers saving the same
// version, exactly one wins.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	d, err := s.delta(run)
	if err != nil {
		return err
	}
	return s.save(ctx, run, d)
}

func (s *Store) save(ctx context.Context, run *state.Run, d *state.Delta) error {
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	args := deltaArgs(make([]any, 0, 6+2*len(d.Items)), d, false)
	stored, err := saveScript.Run(ctx, s.client, s.runKeys(run.ID()), args...).Int64()
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	if stored != -1 {
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: d.Base, Stored: stored, Err: state.ErrConflict}
	}
	run.Saved(d)
	return nil
}

// SaveAppend saves run as [Store.Save] does and appends items of run to
// the session as [Store.Append] does, both or neither: on a standalone
// server (a client made by goredis.NewClient or NewFailoverClient) it is
// one Lua script, so the checkpoint is ahead of the session by
// construction and a crash cannot leave one write without the other. A
// version conflict returns a [*state.StoreError] wrapping
// [state.ErrConflict] and appends nothing; an append refused (an item that
// differs from the one stored at its position: [session.ErrConflict];
// invalid arguments: [session.ErrInvalid]) leaves the checkpoint as it
// was, and run's version too. Items already stored at their positions are
// skipped, so a retry after an ambiguous failure appends nothing twice.
// Appending no items only saves.
//
// In a Redis Cluster (or through a Ring), the run's keys and the session's
// are in different hash slots, which no script can span: there SaveAppend
// saves, then appends, in that order, as two writes. A crash between them
// leaves the checkpoint ahead of the session, which is what a crash-safe
// run needs; the append is then made again on resume.
func (s *Store) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	d, err := s.delta(run)
	if err != nil {
		return err
	}
	if err := rowcodec.Validate(pkg, sessionID, run.ID(), items); err != nil {
		return err
	}
	if _, ok := s.client.(*goredis.Client); !ok || len(items) == 0 {
		if err := s.save(ctx, run, d); err != nil || len(items) == 0 {
			return err
		}
		return s.Append(ctx, sessionID, run.ID(), items)
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	args := deltaArgs(make([]any, 0, 8+2*len(d.Items)+1+4*len(items)), d, true)
	args = appendArgs(args, run.ID(), items)
	keys := append(s.runKeys(run.ID()), s.keys(sessionID)...)
	res, err := saveAppendScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	code, _ := res[0].(int64)
	switch {
	case code == 0:
		run.Saved(d)
		return nil
	case code == 1 && len(res) == 2:
		stored, _ := res[1].(int64)
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: d.Base, Stored: stored, Err: state.ErrConflict}
	case code == 2 && len(res) == 2:
		if err := appendRefused(res[1], sessionID, run.ID(), items); err != nil {
			return err
		}
	}
	return s.storeErr(ctx, "save", run.ID(), fmt.Errorf("unexpected reply %v", res))
}

// Delete removes the run's checkpoint (its head, items and context, with
// one DEL); deleting a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	return s.storeErr(ctx, "delete", runID, s.client.Del(ctx, s.runKeys(runID)...).Err())
}
