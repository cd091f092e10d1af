package redis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/prefixed"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

const pkg = "redis"

var (
	_ session.Store        = (*Store)(nil)
	_ session.ChangeReader = (*Store)(nil)
)

// A Store keeps sessions (and run checkpoints, see [Store.Save]) in Redis.
// It is safe for concurrent use by multiple goroutines and by many workers
// sharing the server: every write is one Lua script or one command, which
// Redis runs atomically ([Store.SaveAppend] in a Redis Cluster: two, see
// there).
type Store struct {
	client  goredis.UniversalClient
	owned   bool // Close closes the client
	prefix  string
	listing string // the listing's index base (see indexBase), made once
	gate    rowcodec.Gate
	codec   rowcodec.Codec // signing and verification of checkpoints
	items   ItemCodec      // the stored form of items, or nil: canonical JSON
	places  placeCache     // the places of the runs appended to, a hint
}

// ItemCodec returns the codec the store keeps items with
// ([WithItemCodec]), or nil.
func (s *Store) ItemCodec() ItemCodec { return s.items }

// Open connects to the Redis server at url (redis://[user:pass@]host:port/db,
// or rediss:// for TLS), checks it answers, and returns a store that owns
// the client: [Store.Close] closes it.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: open: %w", err)
	}
	client := goredis.NewClient(o)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: open %s: %w", o.Addr, err)
	}
	s := New(client, opts...)
	s.owned = true
	return s, nil
}

// New returns a store over a client the caller owns (and closes, after the
// store's last use). A cluster client works: a session's keys share one
// hash slot, and so do a run's.
func New(client goredis.UniversalClient, opts ...Option) *Store {
	if client == nil {
		panic("redis: New called with a nil client")
	}
	cfg := newConfig(opts)
	return &Store{client: client, prefix: cfg.prefix, listing: cfg.prefix + "runs:{index}:", gate: rowcodec.Gate{Pkg: pkg}, codec: cfg.codec, items: cfg.items}
}

// Close makes the store unusable: later calls return [session.ErrClosed]
// (the state.Store methods an error wrapping it). A store made by [Open]
// also closes its client; one made by [New] leaves it to its owner. Closing
// twice is not an error.
func (s *Store) Close() error {
	if !s.gate.Close() {
		return nil
	}
	if s.owned {
		if err := s.client.Close(); err != nil {
			return fmt.Errorf("redis: close: %w", err)
		}
	}
	return nil
}

// A call ID's ID key, as the calls set and the outputs hash key it, is
// its length in 8 hex digits, then the ID, so that no ID is a prefix of
// another's key. appendArgs writes it.

func (s *Store) wrap(ctx context.Context, op, sessionID string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		err = session.ErrClosed
	}
	return s.gate.Wrap(ctx, op, sessionID, err)
}

// A member of a session's sorted set is the item's position, 16 hex digits
// of the run's place then 16 of its Seq, followed by the encoded item. All
// scores are 0, so the set is ordered by member bytes: by (place, Seq).
const posLen = 32

// encode returns the stored form of item it of run runID of session sid
// (without its position): format byte 1, then the kind name and the tool
// name, each after its uvarint length, then the raw JSON, or what the
// store's item codec makes of it.
func (s *Store) encode(ctx context.Context, sid, runID string, it state.Item) ([]byte, error) {
	return s.appendEncoded(ctx, make([]byte, 0, s.encodedLen(runID, it)), sid, runID, it)
}

// encodedLen returns the length of encode's form of it: exact without an
// item codec, an estimate of the sealed form with one.
func (s *Store) encodedLen(runID string, it state.Item) int {
	n := it.RawLen()
	if s.items != nil {
		n += 48 + len(runID) // the sealed form, bytes: see session/encrypt
	}
	return 1 + 2*binary.MaxVarintLen64 + len(it.Kind().String()) + len(it.Name()) + n
}

// appendEncoded appends encode's form of it to b.
func (s *Store) appendEncoded(ctx context.Context, b []byte, sid, runID string, it state.Item) ([]byte, error) {
	kind := it.Kind().String()
	b = append(b, 1)
	b = prefixed.Append(b, kind)
	b = prefixed.Append(b, it.Name())
	if s.items == nil {
		return it.AppendRaw(b), nil
	}
	b, err := s.items.SealItem(ctx, b, sid, runID, it)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", it, err)
	}
	return b, nil
}

// decodeMember rebuilds an item of session sid (of run runID, or ""
// when the read does not know it) from a sorted-set member, through the
// store's item codec if it has one.
func (s *Store) decodeMember(ctx context.Context, sid, runID, m string) (state.Item, error) {
	if len(m) < posLen+1 || m[posLen] != 1 {
		return state.Item{}, fmt.Errorf("%w: malformed member (%d bytes)", session.ErrCorrupt, len(m))
	}
	seq, err := strconv.ParseInt(m[16:posLen], 16, 64)
	if err != nil {
		return state.Item{}, fmt.Errorf("%w: malformed position %q: %v", session.ErrCorrupt, m[:posLen], err)
	}
	rest := []byte(m[posLen+1:])
	field := func() (string, bool) {
		f, r, ok := prefixed.Cut(rest)
		rest = r
		return string(f), ok
	}
	kind, ok1 := field()
	name, ok2 := field()
	if !ok1 || !ok2 {
		return state.Item{}, fmt.Errorf("%w: malformed item at seq %d", session.ErrCorrupt, seq)
	}
	rd := rowcodec.Reader{Ctx: ctx, Codec: s.items, SessionID: sid, RunID: runID}
	it, err := rd.Decode(kind, seq, name, rest)
	if err != nil {
		return state.Item{}, fmt.Errorf("decode item at seq %d: %w", seq, err)
	}
	return it, nil
}

func seqHex(seq int64) string { return fmt.Sprintf("%016x", seq) }

// appendScript stores a batch of one run atomically. KEYS: items, runs,
// places, calls, outputs, stamps, stamp (see keys). ARGV: the run ID,
// then the batch in its prepared form or in the general one, the items'
// roles, each item and the ID keys of its calls and outputs (see
// appendArgs). It checks every item first and writes only if none
// conflicts, each key with one command for the batch. An item placed
// after the run's last stored position is new; only one at or before it
// is looked up, a retry's or a held-back message's. A common batch (see
// below) learns that it all follows the run's stored items from one
// ZLEXCOUNT of the run's members at or after its first position (a
// number, where reading the last member made a 150-byte string and three
// more to cut it); any other batch reads the run's last member. It
// returns, on success, 0 when it wrote the prepared form (see below),
// else "p" and the run's place ("P" and the place when the append placed
// the session's first run: the session is new); "g" when the prepared
// form does not fit, having written nothing; on a refusal, the hex
// Seq of the first conflicting item, or "dup:" and the hex Seq of an
// output whose call has an output at another position. A new run's place also maps back to its
// run ID in the outputs hash, field "p<place>" (no other field starts
// with "p"), for the pages of a session. An output answers the latest call
// with its ID before it, in the batch or stored: O(log n) an output, no
// lookup when its call is in the batch after the run's stored items.
//
// Every string the script makes costs the server an allocation that Lua's
// collector then walks, and every number handed to redis.call a
// conversion by snprintf: in callgrind's count of the server's
// instructions these were most of an append (see bench/README.md). So a
// batch whose Seqs ascend, all after the run's stored items, each output
// after its call (the common append: a call, its output and a message)
// takes a path that makes only the strings it writes and the bounds of
// its count: each member is the run's place joined to its argument, and
// nothing is looked up. Any other
// batch takes the general path, which compares and looks up item by item.
//
// When the client knows the run's place (it appended to the run before:
// see placeCache), it sends a common batch in a prepared form instead,
// with every member, position, call and outputs field joined to that
// place already, each its own argument: then the script checks the
// place and the ZLEXCOUNT and hands the arguments to its four writes as
// they come, and makes no string but the stamp. A place that is not the
// run's (the session was cleared since) or a batch that is not after the
// run's stored items gets "g", and the client sends the batch again in
// the general form. What is stored is the same whichever path wrote it.
var appendScript = newScript(appendLua)

// appendLua is the source of appendScript; [Store.SaveAppend] runs it as a
// function, with its own KEYS and ARGV.
const appendLua = `
local run = ARGV[1]
local place = redis.call('HGET', KEYS[2], run)
-- The prepared form (see preparedArgs), when the client sent one: the
-- place it remembers the run by, the bounds of the run's members at or
-- after the batch's first position, the numbers of items, calls and
-- outputs, and every string the common path below would make, made by
-- the client, each an argument. If the place is the run's and nothing of
-- the run is stored at or after the batch, it is the common batch, and
-- the script only writes; else it writes nothing and asks for the batch
-- in the general form ("g").
if ARGV[2] ~= '' then
	if place ~= ARGV[2] or redis.call('ZLEXCOUNT', KEYS[1], ARGV[3], ARGV[4]) ~= 0 then return 'g' end
	local n, c, o = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
	local at = 8 + 2 * n
	local stamp = tostring(redis.call('INCR', KEYS[7]))
	-- Made with room for four items: a table grown from empty is
	-- reallocated at each power of two.
	local stamps = {stamp, false, stamp, false, stamp, false, stamp, false}
	for i = 1, n do stamps[2 * i - 1], stamps[2 * i] = stamp, ARGV[at + i - 1] end
	redis.call('ZADD', KEYS[1], unpack(ARGV, 8, at - 1))
	redis.call('ZADD', KEYS[6], unpack(stamps, 1, 2 * n))
	at = at + n
	if c > 0 then redis.call('ZADD', KEYS[4], unpack(ARGV, at, at + 2 * c - 1)) end
	at = at + 2 * c
	if c + o > 0 then redis.call('HSET', KEYS[5], unpack(ARGV, at, at + 2 * c + 4 * o - 1)) end
	return 0
end
local a = cmsgpack.unpack(ARGV[3])
local roles = a[1]
local n = #roles - 1
local rb = {}
if n < 4000 then
	rb = {string.byte(roles, 1, n + 1)}
else
	for i = 1, n + 1 do rb[i] = string.byte(roles, i) end
end
local idk, j = {}, 2 + n
for i = 1, n do
	if rb[i] ~= 110 then idk[i], j = a[j], j + 1 end
end
local fresh, answers, zero = nil, {}, '0000000000000000'
-- The common batch: Seqs ascending (rb[n + 1] is "a"), each item after
-- the run's last stored one (nothing stored at or after the first item's
-- position: one count, an integer reply), each output after a call of its
-- ID in the batch unless the run is new. Nothing to look up.
local fast = rb[n + 1] == 97
if fast and place then
	fast = redis.call('ZLEXCOUNT', KEYS[1], '[' .. place .. string.sub(a[2], 1, 16), '(' .. place .. '\255') == 0
end
if fast then
	local lastCall, answered, callOf = {}, {}, {}
	for i = 1, n do
		local r = rb[i]
		if r == 99 then
			lastCall[idk[i]] = i
		elseif r == 111 then
			local c = lastCall[idk[i]]
			if c == nil and place then fast = false break end
			local key = c or idk[i]
			if answered[key] then return 'dup:' .. string.sub(a[1 + i], 1, 16) end
			answered[key], callOf[i] = true, c or false
		end
	end
	if fast then
		for o, c in pairs(callOf) do
			local call = zero
			if c then call = string.sub(a[1 + c], 1, 16) end
			answers[idk[o] .. call] = string.sub(a[1 + o], 1, 16)
		end
	end
end
if not fast then
	local last
	if place then
		last = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. place .. '\255', '[' .. place, 'LIMIT', 0, 1)[1]
		if last then last = string.sub(last, 1, 32) end
	end
	fresh, answers = {}, {}
	local bound = last and last .. '\255'
	local seen, seqs = {}, {}
	for i = 1, n do
		local arg = a[1 + i]
		local seq, val = string.sub(arg, 1, 16), string.sub(arg, 17)
		local prev = seen[seq]
		if prev == nil and bound then
			local pos = place .. seq
			if pos < bound then
				local m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. pos, '(' .. pos .. '\255', 'LIMIT', 0, 1)[1]
				if m then prev = string.sub(m, 33) end
			end
		end
		if prev == nil then
			fresh[#fresh + 1] = i
			seen[seq], seqs[i] = val, seq
		elseif prev ~= val then
			return seq
		end
	end
	if #fresh == 0 then return 'p' .. place end
	local batchCalls = {}
	for _, i in ipairs(fresh) do
		if rb[i] == 99 then
			local l = batchCalls[idk[i]] or {}
			l[#l + 1] = seqs[i]
			batchCalls[idk[i]] = l
		end
	end
	for _, i in ipairs(fresh) do
		if rb[i] == 111 then
			local k, seq = idk[i], seqs[i]
			local call = zero
			for _, c in ipairs(batchCalls[k] or {}) do
				if c < seq and c > call then call = c end
			end
			local prev
			-- A call of the batch placed after the run's last stored item is
			-- later than every stored call, and no stored output answers it:
			-- no lookup (a call and its output appended together).
			if place and (call == zero or (last and place .. call <= last)) then
				local m = redis.call('ZREVRANGEBYLEX', KEYS[4], '(' .. place .. k .. seq, '[' .. place .. k, 'LIMIT', 0, 1)[1]
				if m then
					local c = string.sub(m, -16)
					if c > call then call = c end
				end
				prev = redis.call('HGET', KEYS[5], place .. k .. call)
			end
			prev = answers[k .. call] or prev
			if prev and prev ~= seq then return 'dup:' .. seq end
			answers[k .. call] = seq
		end
	end
end
local created = 'p'
if not place then
	local p = redis.call('INCR', KEYS[3])
	place = string.format('%016x', p)
	redis.call('HSET', KEYS[2], run, place)
	redis.call('HSET', KEYS[5], 'p' .. place, run)
	if p == 1 then created = 'P' end
end
local stamp = tostring(redis.call('INCR', KEYS[7]))
local items, stamps, calls, fields = {}, {}, {}, {}
for x = 1, fresh and #fresh or n do
	local i = fresh and fresh[x] or x
	local m = place .. a[1 + i]
	local pos = string.sub(m, 1, 32)
	items[#items + 1], items[#items + 2] = '0', m
	stamps[#stamps + 1], stamps[#stamps + 2] = stamp, pos
	if rb[i] == 99 then
		local cm = place .. idk[i] .. string.sub(m, 17, 32)
		calls[#calls + 1], calls[#calls + 2] = '0', cm
		fields[#fields + 1], fields[#fields + 2] = 'r' .. pos, 'c' .. cm
	end
end
for field, seq in pairs(answers) do
	local f, at = place .. field, #fields
	fields[at + 1], fields[at + 2], fields[at + 3], fields[at + 4] = f, seq, 'r' .. place .. seq, 'a' .. f
end
-- Defined here, not at the top: the prepared path, which returned above,
-- does not make its closure (see listingLua).
local function many(cmd, key, args)
	for i = 1, #args, 2000 do
		redis.call(cmd, key, unpack(args, i, math.min(i + 1999, #args)))
	end
end
many('ZADD', KEYS[1], items)
many('ZADD', KEYS[6], stamps)
if #calls > 0 then many('ZADD', KEYS[4], calls) end
if #fields > 0 then many('HSET', KEYS[5], fields) end
return created .. place
`

// popScript removes and returns the session's last item (nil if none),
// and what the calls set and the outputs hash hold of it, and moves the
// session's generation on. KEYS: the session's (see keys), then its
// generation (genKey).
var popScript = goredis.NewScript(`
local z = redis.call('ZPOPMAX', KEYS[1])
if #z == 0 then return false end
redis.call('INCR', KEYS[8])
local m = z[1]
redis.call('ZREM', KEYS[6], string.sub(m, 1, 32))
local ref = 'r' .. string.sub(m, 1, 32)
local r = redis.call('HGET', KEYS[5], ref)
if r then
	if string.sub(r, 1, 1) == 'c' then
		redis.call('ZREM', KEYS[4], string.sub(r, 2))
	else
		redis.call('HDEL', KEYS[5], string.sub(r, 2))
	end
	redis.call('HDEL', KEYS[5], ref)
end
return m
`)

// lookupScript returns the member at (run, seq), or nil. KEYS: items,
// runs. ARGV: run ID, seq as 16 hex digits.
var lookupScript = goredis.NewScript(`
local place = redis.call('HGET', KEYS[2], ARGV[1])
if not place then return false end
local pos = place .. ARGV[2]
local m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. pos, '(' .. pos .. '\255', 'LIMIT', 0, 1)[1]
return m or false
`)

// List returns the session's items in order (by the run's place, then Seq);
// limit > 0 returns only the last limit items. It is one ZRANGE: one
// consistent snapshot. An unknown session has no items.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return nil, err
	}
	start := int64(0)
	if limit > 0 {
		start = -int64(limit)
	}
	members, err := s.client.ZRange(ctx, s.keys(sessionID)[0], start, -1).Result()
	if err != nil {
		return nil, s.wrap(ctx, "list", sessionID, err)
	}
	if len(members) == 0 {
		return nil, nil
	}
	out := make([]state.Item, len(members))
	for i, m := range members {
		if out[i], err = s.decodeMember(ctx, sessionID, "", m); err != nil {
			return nil, s.wrap(ctx, "list", sessionID, err)
		}
	}
	return out, nil
}

// ListBefore returns, in order, the session's items placed before the
// items of run runID, among those written before q.Stamp when it is > 0
// (see [session.Store]); q.Limit > 0 returns only the last Limit of them.
// One script, one consistent snapshot: the run's place, the session's
// stamp, then ZREVRANGEBYLEX below the place, each member's stamp read
// when q.Stamp is set.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	if err := s.gate.Begin(ctx, "list", sessionID); err != nil {
		return session.History{}, err
	}
	keys := s.keys(sessionID)
	res, err := listBeforeScript.Run(ctx, s.client, []string{keys[0], keys[1], keys[5], keys[6]}, runID, q.Limit, q.Stamp).Slice()
	if err != nil {
		return session.History{}, s.wrap(ctx, "list", sessionID, err)
	}
	last, _ := res[0].(int64)
	h := session.History{Stamp: last + 1}
	if len(res) == 1 {
		return h, nil
	}
	h.Items = make([]state.Item, len(res)-1)
	for i, r := range res[1:] {
		m, _ := r.(string)
		// The script returns the items last first.
		if h.Items[len(h.Items)-1-i], err = s.decodeMember(ctx, sessionID, "", m); err != nil {
			return session.History{}, s.wrap(ctx, "list", sessionID, err)
		}
	}
	return h, nil
}

// ReadChanges reads the session's items written at or after q.Since, or
// its last q.Limit items (see [session.ChangeQuery]), with the session's
// stamp, generation and run q.RunID's place: one script, one snapshot.
// With Since it reads the sorted set of the items' write stamps from
// Since up: O(the items written since, each found in O(log n)).
func (s *Store) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	if err := s.gate.Begin(ctx, "read changes of", sessionID); err != nil {
		return session.Changes{}, err
	}
	keys := s.keys(sessionID)
	res, err := changesScript.Run(ctx, s.client, []string{keys[0], keys[1], keys[5], keys[6], s.genKey(sessionID)},
		q.RunID, q.Since, q.Limit).Slice()
	if err != nil {
		return session.Changes{}, s.wrap(ctx, "read changes of", sessionID, err)
	}
	ch, err := s.scanChanges(ctx, sessionID, res)
	if err != nil {
		return session.Changes{}, s.wrap(ctx, "read changes of", sessionID, err)
	}
	return ch, nil
}

// scanChanges reads changesScript's reply of session sid.
func (s *Store) scanChanges(ctx context.Context, sid string, res []any) (session.Changes, error) {
	if len(res) < 3 {
		return session.Changes{}, fmt.Errorf("%w: a change read of %d values", session.ErrCorrupt, len(res))
	}
	last, _ := res[0].(int64)
	gen, _ := res[1].(int64)
	ch := session.Changes{Stamp: last + 1, Generation: gen}
	if p, _ := res[2].(string); p != "" {
		place, err := strconv.ParseInt(p, 16, 64)
		if err != nil {
			return session.Changes{}, fmt.Errorf("%w: malformed place %q", session.ErrCorrupt, p)
		}
		ch.RunPlace = place
	}
	ch.Items = make([]session.Placed, 0, len(res)-3)
	for _, r := range res[3:] {
		m, _ := r.(string)
		it, err := s.decodeMember(ctx, sid, "", m)
		if err != nil {
			return session.Changes{}, err
		}
		place, err := strconv.ParseInt(m[:16], 16, 64)
		if err != nil {
			return session.Changes{}, fmt.Errorf("%w: malformed place %q", session.ErrCorrupt, m[:16])
		}
		ch.Items = append(ch.Items, session.Placed{Place: place, Item: it})
	}
	rowcodec.SortPlaced(ch.Items)
	return ch, nil
}

// changesScript returns the session's last stamp, its generation, run
// ARGV[1]'s place ("" for none), then the members written at or after
// stamp ARGV[2] if it is above 0 (by the stamps set), else the last
// ARGV[3] members (all if it is 0), last first. KEYS: items, runs,
// stamps, stamp, gen.
var changesScript = goredis.NewScript(`
local out = {tonumber(redis.call('GET', KEYS[4]) or '0'), tonumber(redis.call('GET', KEYS[5]) or '0'),
	redis.call('HGET', KEYS[2], ARGV[1]) or ''}
local since, n = tonumber(ARGV[2]), tonumber(ARGV[3])
if since > 0 then
	for _, pos in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], since, '+inf')) do
		local m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. pos, '(' .. pos .. '\255', 'LIMIT', 0, 1)[1]
		if m then out[#out + 1] = m end
	end
	return out
end
if n <= 0 then n = -1 end
for _, m in ipairs(redis.call('ZREVRANGEBYLEX', KEYS[1], '+', '-', 'LIMIT', 0, n)) do out[#out + 1] = m end
return out
`)

// listBeforeScript returns the session's last stamp, then, last first,
// the last ARGV[2] members (all if it is 0) placed before run ARGV[1]'s
// place, or before none if the run has no place, and stamped below
// ARGV[3] if it is above 0 (a member with no stamp counts as 0). KEYS:
// items, runs, stamps, stamp.
var listBeforeScript = goredis.NewScript(`
local n, before = tonumber(ARGV[2]), tonumber(ARGV[3])
local place = redis.call('HGET', KEYS[2], ARGV[1])
local max = '+'
if place then max = '(' .. place end
local out = {tonumber(redis.call('GET', KEYS[4]) or '0')}
if before <= 0 then
	if n <= 0 then n = -1 end
	for _, m in ipairs(redis.call('ZREVRANGEBYLEX', KEYS[1], max, '-', 'LIMIT', 0, n)) do out[#out + 1] = m end
	return out
end
local want = n
if want <= 0 then want = math.huge end
local batch = math.min(math.max(n, 16), 1000)
if n <= 0 then batch = 1000 end
while #out - 1 < want do
	local ms = redis.call('ZREVRANGEBYLEX', KEYS[1], max, '-', 'LIMIT', 0, batch)
	for _, m in ipairs(ms) do
		local st = redis.call('ZSCORE', KEYS[3], string.sub(m, 1, 32))
		if not st or tonumber(st) < before then
			out[#out + 1] = m
			if #out - 1 >= want then break end
		end
	end
	if #ms < batch then break end
	max = '(' .. ms[#ms]
end
return out
`)

// Append stores items of run runID in one Lua script, which Redis runs
// atomically: all or none. An item already stored at its (runID, Seq) is
// skipped; one that differs from the stored item (kind, tool name or JSON)
// rejects the whole call with [session.ErrConflict], and an output for a
// call that has one at another position (see [session.Store]) with
// [session.ErrDuplicateOutput]. Empty IDs, a zero item
// or a Seq below 1 fail with [session.ErrInvalid]. The first append of a
// run fixes its place after every run already in the session. Appending no
// items stores nothing and fixes nothing. On a cancelled ctx nothing is
// written; if ctx is cancelled while the script is in flight the append may
// or may not have happened, and a retry settles it. A batch the store
// sends in the prepared form (see appendArgs) that does not fit (the
// session was cleared by another worker, or the batch is a retry) is
// sent again in the general form: two scripts, the first of which wrote
// nothing.
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if err := s.gate.Begin(ctx, "append to", sessionID); err != nil {
		return err
	}
	if err := rowcodec.Validate(pkg, sessionID, runID, items); err != nil || len(items) == 0 {
		return err
	}
	keys := s.keys(sessionID)
	head := appendScript.head(keys, max(3, preparedLen(items)))
	args, err := s.appendArgs(ctx, head, sessionID, runID, items)
	if err != nil {
		return s.wrap(ctx, "append to", sessionID, err)
	}
	res, err := appendScript.run(ctx, s.client, args).Result()
	if err == nil && res == "g" { // the prepared form did not fit: nothing written
		if args, err = s.generalArgs(ctx, args[:len(head)], sessionID, runID, items); err != nil {
			return s.wrap(ctx, "append to", sessionID, err)
		}
		res, err = appendScript.run(ctx, s.client, args).Result()
	}
	if err != nil {
		return s.wrap(ctx, "append to", sessionID, err)
	}
	return s.appended(ctx, res, sessionID, runID, items)
}

// appended reads appendLua's reply to an append of items of run runID to
// session sid: it remembers the place the script returns, files a new
// session, and returns the error of a refusal.
func (s *Store) appended(ctx context.Context, res any, sid, runID string, items []state.Item) error {
	if r, ok := res.(string); ok && len(r) == 1+16 && (r[0] == 'p' || r[0] == 'P') {
		s.places.set(sid, runID, r[1:])
		if r[0] == 'P' {
			return s.fileSession(ctx, sid)
		}
		return nil
	}
	return appendRefused(res, sid, runID, items)
}

// appendArrayHeader appends the MessagePack header of an array of n
// elements.
func appendArrayHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

// appendStrHeader appends the MessagePack header of a string of n bytes.
func appendStrHeader(b []byte, n int) []byte {
	switch {
	case n < 32:
		return append(b, 0xa0|byte(n))
	case n < 1<<8:
		return append(b, 0xd9, byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
}

// appendHex appends v in width lower-case hex digits, zero-padded, to b.
func appendHex(b []byte, v uint64, width int) []byte {
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		b = append(b, digits[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// appendRefused translates appendLua's reply: nil for 0, else the error
// for the item it names.
func appendRefused(res any, sessionID, runID string, items []state.Item) error {
	seq, ok := res.(string)
	if !ok {
		return nil
	}
	if dup, ok := strings.CutPrefix(seq, "dup:"); ok {
		for _, it := range items {
			if seqHex(it.Seq()) == dup {
				return fmt.Errorf("redis: append %s to session %q run %q: its call has an output at another position: %w",
					it, sessionID, runID, session.ErrDuplicateOutput)
			}
		}
		return rowcodec.DuplicateOutput(pkg, sessionID, runID, items)
	}
	for _, it := range items {
		if seqHex(it.Seq()) == seq {
			return rowcodec.Conflict(pkg, sessionID, runID, it, "item")
		}
	}
	return fmt.Errorf("redis: append to session %q run %q: conflict at seq 0x%s: %w", sessionID, runID, seq, session.ErrConflict)
}

// Lookup returns the item stored at (runID, seq) in the session, if any.
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "lookup in", sessionID); err != nil {
		return state.Item{}, false, err
	}
	keys := s.keys(sessionID)
	m, err := lookupScript.Run(ctx, s.client, keys[:2], runID, seqHex(seq)).Text()
	if errors.Is(err, goredis.Nil) {
		return state.Item{}, false, nil
	}
	if err != nil {
		return state.Item{}, false, s.wrap(ctx, "lookup in", sessionID, err)
	}
	it, err := s.decodeMember(ctx, sessionID, runID, m)
	if err != nil {
		return state.Item{}, false, s.wrap(ctx, "lookup in", sessionID, err)
	}
	return it, true, nil
}

// Pop removes and returns the session's last item, if any, with one Lua
// script (a ZPOPMAX, and the item's entry among the calls and outputs).
// The item's run keeps its place.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	if err := s.gate.Begin(ctx, "pop from", sessionID); err != nil {
		return state.Item{}, false, err
	}
	m, err := popScript.Run(ctx, s.client, append(s.keys(sessionID), s.genKey(sessionID))).Text()
	if errors.Is(err, goredis.Nil) {
		return state.Item{}, false, nil
	}
	if err != nil {
		return state.Item{}, false, s.wrap(ctx, "pop from", sessionID, err)
	}
	it, err := s.decodeMember(ctx, sessionID, "", m)
	if err != nil {
		return state.Item{}, false, s.wrap(ctx, "pop from", sessionID, err)
	}
	return it, true, nil
}

// Clear removes every item of the session and the places of its runs with
// one DEL, and moves the session's generation on, in one MULTI: a run
// that appends afterwards starts a new place. The session's write stamps
// go on from where they were.
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	if err := s.gate.Begin(ctx, "clear", sessionID); err != nil {
		return err
	}
	keys := s.keys(sessionID)
	_, err := s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, keys[:clearKeys]...)
		p.Incr(ctx, s.genKey(sessionID))
		return nil
	})
	if err != nil {
		return s.wrap(ctx, "clear", sessionID, err)
	}
	return s.unfileSession(ctx, sessionID)
}
