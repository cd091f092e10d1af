package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

var (
	_ state.Store  = (*Store)(nil)
	_ state.Lister = (*Store)(nil)
)

func (s *Store) storeErr(ctx context.Context, op, runID string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		err = session.ErrClosed
	}
	return s.gate.WrapRun(ctx, op, runID, err)
}

// checkpointLua holds the functions the save scripts share. KEYS (k): the
// run's head hash, items hash and context (see [Store.runKeys]). ARGV (a):
// the base version (0: none stored), the new version, "1" if the save is
// full ("f" if it is not and its base filed the run under the status and
// session it has: [state.Delta.Filed]; else "0"), the head, "1" if the
// context is replaced, the context; then the listing's hash of summaries,
// its index base followed by "sum" ("": the caller indexes apart), the
// run ID and its summary after its serial
// (see indexLua and file), which holds its status and session ID; then
// the number of the delta's items' arguments (twice its items), and for
// each item its Seq in decimal and "<version>:<JSON>" (see deltaArgs).
//
// cas returns -1 and the run's serial in the listing as its head keeps it
// (false if it keeps none) if the stored version is the base, else the
// stored version. It compares the versions as strings: this package writes
// both as decimal integers (the client with strconv; the first layout's
// script wrote a Lua number, which Redis also writes in decimal), and
// Lua's tonumber parses a string with strtod twice: 6 000 of the server's
// 330 000 instructions a tool turn (BenchmarkToolTurnInstructions). write
// applies the delta: a full one first removes the stored items and
// context; the head and version are replaced; each item is stored as
// "<version>:<JSON>" under its Seq, all of them with one HSET (one a 1 000
// items: a Lua call takes at most a few thousand arguments), whose
// arguments are the script's own as they come: the client wrote each value
// whole, so the script makes no string of an item's size. (They came as
// one MessagePack array before, which the script unpacked: Redis's Lua
// hashes every byte of every string it is handed, so each item's bytes
// were hashed twice, and cmsgpack's work came on top.) It costs
// O(the delta).
//
// file files the run in the listing's index and keeps its serial in the
// head hash ("s"). A save whose base filed the run under the status and
// session it has ("f"), of a head that keeps the serial, only writes the
// run's summary: the summary stored is the one the save of the base
// version wrote, in the same script, so it holds that serial, status and
// session already, and index's read and parsing of it are spared: 14 000
// of the server's 324 000 instructions a tool turn. A summary can leave
// the listing only with its checkpoint (Delete), or with the listing's
// keys removed by hand: then the HSET added it, and file files the run
// anew. (Removed by hand during a rolling upgrade, a process of the
// earlier version could file the run anew under a serial its head does not
// keep.) A head an earlier version of this package wrote keeps no serial;
// its next save goes through index, which gives it one. index is defined
// in file, after its fast path, so that a save that takes the fast path
// does not make its closure (see listingLua).
const checkpointLua = `
local function cas(k, a)
	local h = redis.call('HMGET', k[1], 'v', 's')
	local stored = h[1] or '0'
	if stored ~= a[1] then return tonumber(stored) end
	return -1, h[2]
end
local function write(k, a)
	if a[3] == '1' then redis.call('DEL', k[2], k[3]) end
	redis.call('HSET', k[1], 'v', a[2], 'd', a[4])
	if a[5] == '1' then redis.call('SET', k[3], a[6]) end
	local last = 10 + tonumber(a[10])
	for i = 11, last, 2000 do
		redis.call('HSET', k[2], unpack(a, i, math.min(i + 1999, last)))
	end
end
local function file(k, a, serial)
	if serial and a[3] == 'f' then
		if redis.call('HSET', a[7], a[8], serial .. a[9]) == 0 then return end
		-- The summary was not there: the listing lost the run. File it anew.
		redis.call('HDEL', a[7], a[8])
	end
` + indexLua + `
	-- index takes the listing's base: a[7] without its "sum".
	redis.call('HSET', k[1], 's', index(string.sub(a[7], 1, -4), a[8], a[9]))
end
`

// indexLua keeps the listing's index (list.go), whose keys all start
// with base and share its hash tag: base.."sum", a hash of each run's
// summary ("<serial>:<status>:<length of the session ID>:<session
// ID><JSON>"); base.."serial", the last serial given; and sorted sets of
// run IDs scored by serial: base.."g:0" (every run), base.."g:<status>",
// base.."s:0:<session>" and base.."s:<status>:<session>". index files
// run id under its new status and session, numbering it if it is new,
// and returns its serial; unindex removes it; each costs O(log n) per set
// it touches. A run whose status and session are those of its stored
// summary is in its sets already, under its serial: index then rewrites
// only the summary (one HGET and one HSET). Its last argument is the
// summary after the serial, ":<status>:<length of the session
// ID>:<session ID><JSON>", which the client writes, and which index
// reads the status and session ID from: they are not arguments of their
// own, which every save would send (and the server hash, see
// checkpointLua) to be read only when a run is filed anew.
//
// The scripts build the names of these keys from base rather than take
// them in KEYS: which sets a run leaves depends on its stored summary.
// They are in the hash slot of their first declared key (base.."sum"),
// so in a Redis Cluster a script that touches them runs where they are.
const indexLua = `
local function index(base, id, rest)
` + listingLua + `
	local hk = base .. 'sum'
	local old = redis.call('HGET', hk, id)
	-- filed is rest up to the JSON: the status and session ID.
	local status, l, at = string.match(rest, '^:(%d):(%d+):()')
	local sidEnd = at + tonumber(l) - 1
	local sid, filed = string.sub(rest, at, sidEnd), string.sub(rest, 1, sidEnd)
	local serial
	local moved = true
	if old then
		-- Filed under this status and session already (a save in the
		-- middle of a run) if filed follows the stored serial: then
		-- nothing else is cut out of the stored summary.
		local at = string.find(old, ':', 1, true)
		if at and string.sub(old, at, at + #filed - 1) == filed then
			serial, moved = string.sub(old, 1, at - 1), false
		else
			local n, t, osid = parseSum(old)
			serial = n
			moved = t ~= status or osid ~= sid
			if moved then unlist(base, id, t, osid) end
		end
	else
		serial = redis.call('INCR', base .. 'serial')
		redis.call('ZADD', base .. 'g:0', serial, id)
	end
	if moved then
		redis.call('ZADD', base .. 'g:' .. status, serial, id)
		if sid ~= '' then
			redis.call('ZADD', base .. 's:0:' .. sid, serial, id)
			redis.call('ZADD', base .. 's:' .. status .. ':' .. sid, serial, id)
		end
	end
	redis.call('HSET', hk, id, serial .. rest)
	return serial
end
`

// listingLua holds the functions index and unindex share, which each
// defines in its own body. Lua makes a closure each time a function's
// definition runs, with an upvalue for each local function it calls:
// index, calling these two, cost the server some 2 000 instructions a
// save to make (BenchmarkToolTurnInstructions), a function calling
// nothing some 350. Made in index, they cost a save only when it files a
// run anew; index itself is made only then (see file).
const listingLua = `
	local function parseSum(v)
		local n, t, l, at = string.match(v, '^(%d+):(%d):(%d+):()')
		l = tonumber(l)
		return n, t, string.sub(v, at, at + l - 1), string.sub(v, at + l)
	end
	local function unlist(base, id, t, sid)
		redis.call('ZREM', base .. 'g:' .. t, id)
		if sid ~= '' then
			redis.call('ZREM', base .. 's:0:' .. sid, id)
			redis.call('ZREM', base .. 's:' .. t .. ':' .. sid, id)
		end
	end
`

// unindexLua removes run id from the listing's index (see indexLua). It
// is apart from indexLua so that the save scripts, which never unindex,
// do not make its closure.
const unindexLua = `
local function unindex(base, id)
` + listingLua + `
	local hk = base .. 'sum'
	local old = redis.call('HGET', hk, id)
	if not old then return end
	local n, t, sid = parseSum(old)
	redis.call('ZREM', base .. 'g:0', id)
	unlist(base, id, t, sid)
	redis.call('HDEL', hk, id)
end
`

// saveScript applies a delta if the stored version is its base, and files
// the run in the listing's index unless ARGV[7] is "" (see checkpointLua;
// the items follow ARGV[10]). It returns -1 on success, or
// the stored version on a conflict, having written nothing.
var saveScript = newScript(checkpointLua + `
local stored, serial = cas(KEYS, ARGV)
if stored ~= -1 then return stored end
write(KEYS, ARGV)
if ARGV[7] ~= '' then file(KEYS, ARGV, serial) end
return -1
`)

// saveAppendScript applies a delta and appends to a session, both or
// neither. KEYS: the run's three keys, then the session's seven (see
// appendScript). ARGV: the delta's as for saveScript, its items included
// (the ARGV[10] after ARGV[10]), then appendScript's ARGV (see
// appendArgs) but its first, the run ID, which is the delta's ARGV[8].
// It returns {0, what appendScript returned} on success, {1, stored
// version} on a version conflict and {2, what appendScript returned} when
// the append is refused or its prepared form does not fit ("g"); then
// nothing is written. It files the run in the listing's index as
// saveScript does.
var saveAppendScript = newScript(checkpointLua +
	"local function sessionAppend(KEYS, ARGV)\n" + appendLua + "\nend\n" + `
local stored, serial = cas(KEYS, ARGV)
if stored ~= -1 then return {1, stored} end
local res = sessionAppend({KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]}, {ARGV[8], unpack(ARGV, 11 + tonumber(ARGV[10]))})
if res ~= 0 and string.find(res, '^[pP]') == nil then return {2, res} end
write(KEYS, ARGV)
if ARGV[7] ~= '' then file(KEYS, ARGV, serial) end
return {0, res}
`)

// indexScript files a run in the listing's index, apart from its save
// (in a Redis Cluster). KEYS: base.."sum". ARGV: base, the run ID and
// its summary after its serial.
var indexScript = goredis.NewScript(indexLua + `
index(ARGV[1], ARGV[2], ARGV[3])
return 0
`)

// deleteScript removes a run's checkpoint and its entry in the listing's
// index at once (on a standalone server). KEYS: the run's three keys, then
// base.."sum". ARGV: base, the run ID.
var deleteScript = goredis.NewScript(unindexLua + `
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
unindex(ARGV[1], ARGV[2])
return 0
`)

// unindexScript removes a run from the listing's index, apart from the
// deletion of its checkpoint (in a Redis Cluster). KEYS: base.."sum".
// ARGV: base, the run ID.
var unindexScript = goredis.NewScript(unindexLua + `
unindex(ARGV[1], ARGV[2])
return 0
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

// deltaArgs appends d's ARGV (see checkpointLua) to args, with the index
// base (or "" when the run is indexed apart), and room in args for more
// arguments after them. Every argument but the flags is a slice (argSeg)
// of d's head, of its context, or of one buffer made to size for the
// rest, so that the arguments cost three allocations (the buffer, the
// slices, the list) whatever their number, not one each.
func deltaArgs(args []any, d *state.Delta, base string, more int) []any {
	var vb [20]byte
	tag := append(strconv.AppendInt(vb[:0], d.Version, 10), ':')
	sum := d.Summary
	size := 2*20 + len(base) + len("sum") + len(sum.RunID) + summaryRestLen(sum)
	for _, p := range d.Items {
		size += 20 + len(tag) + len(p.Data)
	}
	w := argsBuilder{
		b:    make([]byte, 0, size),
		segs: make([]argSeg, 0, 7+2*len(d.Items)),
		args: slices.Grow(args, deltaArgsLen(d)+more),
	}
	w.b = strconv.AppendInt(w.b, d.Base, 10)
	w.end(0)
	start := len(w.b)
	w.b = strconv.AppendInt(w.b, d.Version, 10)
	w.end(start)
	switch {
	case d.Full:
		w.args = append(w.args, "1")
	case d.Filed:
		w.args = append(w.args, "f")
	default:
		w.args = append(w.args, "0")
	}
	w.slice(d.Head)
	w.args = append(w.args, flag(d.Context != nil))
	w.slice(d.Context)
	if base != "" {
		start = len(w.b)
		w.b = append(append(w.b, base...), "sum"...)
		w.end(start)
	} else {
		w.args = append(w.args, "")
	}
	w.add(sum.RunID)
	start = len(w.b)
	w.b = appendSummaryRest(w.b, sum)
	w.end(start)
	w.args = append(w.args, 2*len(d.Items))
	for _, p := range d.Items {
		start = len(w.b)
		w.b = strconv.AppendInt(w.b, p.Seq, 10)
		w.end(start)
		start = len(w.b)
		w.b = append(append(w.b, tag...), p.Data...)
		w.end(start)
	}
	return w.args
}

// deltaArgsLen returns the number of arguments deltaArgs appends for d.
func deltaArgsLen(d *state.Delta) int { return 10 + 2*len(d.Items) }

// flag returns "1" for true, "0" for false: the script's flags, as
// arguments. A string a function returns, put in an interface, is copied
// to the heap; a constant is not.
func flag(v bool) any {
	if v {
		return "1"
	}
	return "0"
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
// ([state.Run.HistoryRef]) gets it from the store's own sessions
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
		runcore.SetVersion(run, version)
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
// save on run (runcore.Saved). It writes the head and the new items,
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
	_, oneScript := s.client.(*goredis.Client)
	base := ""
	if oneScript {
		base = s.indexBase()
	}
	args := deltaArgs(saveScript.head(s.runKeys(run.ID()), deltaArgsLen(d)), d, base, 0)
	stored, err := saveScript.run(ctx, s.client, args).Int64()
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	if stored != -1 {
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: d.Base, Stored: stored, Err: state.ErrConflict}
	}
	runcore.Saved(run, d)
	if !oneScript {
		return s.index(ctx, d)
	}
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
	keys := s.appendKeys(s.appendRunKeys(make([]string, 0, 3+len(sessionKeySuffixes)), run.ID()), sessionID)
	more := max(3, preparedLen(items)) // the append's arguments, either form
	args := deltaArgs(saveAppendScript.head(keys, deltaArgsLen(d)+more), d, s.indexBase(), more)
	deltaLen := len(args)
	args, err = s.appendArgs(ctx, args, sessionID, run.ID(), items)
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	// The append's first argument, the run ID, is the delta's already.
	args = slices.Delete(args, deltaLen, deltaLen+1)
	res, err := saveAppendScript.run(ctx, s.client, args).Slice()
	if err == nil && len(res) == 2 && res[0] == int64(2) && res[1] == "g" {
		// The prepared form did not fit; nothing was written.
		if args, err = s.generalArgs(ctx, args[:deltaLen], sessionID, run.ID(), items); err != nil {
			return s.storeErr(ctx, "save", run.ID(), err)
		}
		args = slices.Delete(args, deltaLen, deltaLen+1)
		res, err = saveAppendScript.run(ctx, s.client, args).Slice()
	}
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	var code any // the reply's first element: a reply of another shape is unexpected
	if len(res) == 2 {
		code = res[0]
	}
	switch code {
	case int64(0):
		runcore.Saved(run, d)
		return s.appended(ctx, res[1], sessionID, run.ID(), items)
	case int64(1):
		stored, _ := res[1].(int64)
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: d.Base, Stored: stored, Err: state.ErrConflict}
	case int64(2):
		if err := appendRefused(res[1], sessionID, run.ID(), items); err != nil {
			return err
		}
	}
	return s.storeErr(ctx, "save", run.ID(), fmt.Errorf("unexpected reply %v", res))
}

// Delete removes the run's checkpoint (its head, items and context) and
// its entry in the listing's index, with one script on a standalone
// server; in a Redis Cluster the index entry goes second, apart (see
// [Store.ListRuns]). Deleting a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	base := s.indexBase()
	if _, ok := s.client.(*goredis.Client); ok {
		keys := append(s.runKeys(runID), base+"sum")
		return s.storeErr(ctx, "delete", runID, deleteScript.Run(ctx, s.client, keys, base, runID).Err())
	}
	if err := s.client.Del(ctx, s.runKeys(runID)...).Err(); err != nil {
		return s.storeErr(ctx, "delete", runID, err)
	}
	return s.storeErr(ctx, "delete", runID, unindexScript.Run(ctx, s.client, []string{base + "sum"}, base, runID).Err())
}
