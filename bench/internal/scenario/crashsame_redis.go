package scenario

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// The raw-same-writes driver of Redis: go-redis writing exactly what the
// Redis store (session/redis) writes for a crash-safe tool turn, into the
// store's own keys, in as many round trips (one MULTI/EXEC of plain
// commands for each of the store's scripts), but with every value
// computed in Go: no compare-and-swap of the version, no read of the
// run's place, of its listing's summary or of the session's positions,
// no check of the batch, no Lua. It is the floor of the store's writes:
// what the store takes over it is its scripts and their reads and checks,
// where the raw-driver row (rawRedis) writes less than the store does
// (no listing, no write stamps, no index of calls and answers).
//
// A steady tool turn (past the run's first save) is, in the store, one
// saveScript and one saveAppendScript, which write:
//
//   - the save before the tool: HSET of the head hash's "v" (the version)
//     and "d" (the head); HSET of the delta's pieces into the run's items
//     hash (the Seq in decimal, "<version>:<JSON>"); HSET of the run's
//     summary in the listing's hash ("<serial>:<status>:<length of the
//     session ID>:<session ID><JSON>"), the run being filed under its
//     status and session already;
//   - the commit: INCR of the session's write stamp; ZADD of the call's
//     and the output's members (position, then the encoded item) to the
//     session's items; ZADD of their positions, scored by the stamp, to
//     the stamps; ZADD of the call's member (place, ID key, Seq) to the
//     calls; HSET into the outputs hash of "r<call position>" to
//     "c<calls member>", of the answered call (place, ID key, call Seq) to
//     the output's Seq, and of "r<output position>" to "a<that call>";
//     then HSET of the head's "v" and "d", of the delta's pieces if it
//     has any (a commit's has none), and of the run's summary.
//
// The scripts' reads (the stored version and the run's serial in the
// listing, which the head hash keeps; the run's place; a ZLEXCOUNT of
// the run's members at or after the batch) are what this driver leaves
// out, with the checks they serve. The stamp
// goes up by INCR as in the store, and the driver scores the positions
// with the count it keeps in Go; the place and the run's serial in the
// listing it reads once, untimed, in reset.

// sameRedis is go-redis on the Redis store's key layout under a prefix
// of its own, the store beside it (on the same client) for the untimed
// seeding and reset: the history appended as the store appends it, the
// run placed in the session and filed in the listing by the store.
type sameRedis struct {
	client *goredis.Client
	store  *redis.Store
	prefix string

	head, pieces                               string     // the run's head hash and items hash
	items, runs, calls, outputs, stamps, stamp string     // the session's keys
	sum                                        string     // the listing's summaries
	first                                      state.Item // what reset appends, then pops, to place the run

	place  string // the run's place in the session, 16 hex digits
	serial string // the run's serial in the listing
	count  int64  // the session's last write stamp

	docs [2]sameDocs // the summaries' JSON of the recorded turns, by rawTurnWrites
	buf  []byte      // the strings of a write, before they are made one
	ends []int       // where each of the pieces' fields and values ends in buf
}

// sameDocs are the parts of the listing's summaries of one recorded
// turn's save and commit, as the store writes them, that do not depend on
// the run's serial or the version: from the status to the JSON's "v":.
type sameDocs struct {
	w            *rawTurnWrites
	save, commit string
}

// samePrefix is the prefix of the keys the raw-same-writes driver of the
// benchmarks writes.
const samePrefix = "turnbench-same:"

func openSameRedis(tb testing.TB) rawDriver { return openSameRedisAt(tb, samePrefix) }

// openSameRedisAt returns the raw-same-writes driver on keys under
// prefix, every key under it removed first.
func openSameRedisAt(tb testing.TB, prefix string) *sameRedis {
	opts, err := goredis.ParseURL(os.Getenv("TURNKIT_REDIS_URL"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &sameRedis{client: goredis.NewClient(opts), prefix: prefix}
	r.store = redis.New(r.client, redis.WithPrefix(prefix))
	// The store's names (session/redis keys.go) of IDs without braces.
	run, sess := prefix+"checkpoint:{"+rawRunID+"}", prefix+"session:{"+rawSessionID+"}"
	r.head, r.pieces = run, run+":items"
	r.items, r.runs, r.calls, r.outputs = sess+":items", sess+":runs", sess+":calls", sess+":outputs"
	r.stamps, r.stamp = sess+":stamps", sess+":stamp"
	r.sum = prefix + "runs:{index}:sum"
	if err := dropPrefix(context.Background(), r.client, prefix); err != nil {
		r.close()
		tb.Fatal(err)
	}
	return r
}

// dropPrefix removes every key under prefix.
func dropPrefix(ctx context.Context, c *goredis.Client, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil || len(keys) == 0 {
		return err
	}
	return c.Unlink(ctx, keys...).Err()
}

// seed appends the history with the store, as the crash-safe scenarios
// do: at the session's first place, listed among the sessions.
func (r *sameRedis) seed(ctx context.Context, history []state.Item) error {
	if len(history) == 0 {
		return errors.New("no history")
	}
	r.first = history[0]
	if err := r.store.Clear(ctx, rawSessionID); err != nil {
		return err
	}
	return r.store.Append(ctx, rawSessionID, "history", history)
}

// reset brings the run back to a fresh start with the store: it pops the
// run's items (which also removes their stamps and their entries among
// the calls and outputs), deletes its checkpoint and listing, places the
// run in the session if it has no place yet (an append of one item, then
// its pop: the place stays), and saves a new run of the same ID, which
// files it in the listing under its session and status (as the steady
// turns' summaries keep it) at version 1; then the head is replaced by
// head. It reads back what the turns write without reading: the place,
// the serial and the last stamp.
func (r *sameRedis) reset(ctx context.Context, head []byte) error {
	if p, err := r.client.HGet(ctx, r.runs, rawRunID).Result(); err == nil {
		n, err := r.client.ZLexCount(ctx, r.items, "["+p, "("+p+"\xff").Result()
		if err != nil {
			return err
		}
		for range n {
			if _, _, err := r.store.Pop(ctx, rawSessionID); err != nil {
				return err
			}
		}
	} else if errors.Is(err, goredis.Nil) {
		if err := r.store.Append(ctx, rawSessionID, rawRunID, []state.Item{r.first}); err != nil {
			return err
		}
		if _, _, err := r.store.Pop(ctx, rawSessionID); err != nil {
			return err
		}
	} else {
		return err
	}
	if err := r.store.Delete(ctx, rawRunID); err != nil {
		return err
	}
	run := state.NewRun(rawRunID, "bench")
	runcore.SetSessionID(run, rawSessionID)
	if err := r.store.Save(ctx, run); err != nil {
		return err
	}
	if err := r.client.HSet(ctx, r.head, "v", 1, "d", head).Err(); err != nil {
		return err
	}
	var err error
	if r.place, err = r.client.HGet(ctx, r.runs, rawRunID).Result(); err != nil {
		return fmt.Errorf("the run's place: %w", err)
	}
	sum, err := r.client.HGet(ctx, r.sum, rawRunID).Result()
	if err != nil {
		return fmt.Errorf("the run's summary: %w", err)
	}
	r.serial, _, _ = strings.Cut(sum, ":")
	r.count, err = r.client.Get(ctx, r.stamp).Int64()
	if errors.Is(err, goredis.Nil) {
		r.count, err = 0, nil
	}
	return err
}

// docsOf returns the summaries' parts of w, made from its heads on first
// use: a head holds the run's agent, turn, pending approvals and whether
// it finished, which is what the store files the run under.
func (r *sameRedis) docsOf(w *rawTurnWrites) (*sameDocs, error) {
	for i := range r.docs {
		if r.docs[i].w == w {
			return &r.docs[i], nil
		}
	}
	save, err := summaryPart(w.save.head)
	if err != nil {
		return nil, err
	}
	commit, err := summaryPart(w.commit.head)
	if err != nil {
		return nil, err
	}
	d := sameDocs{w: w, save: save, commit: commit}
	if r.docs[0].w == nil {
		r.docs[0] = d
		return &r.docs[0], nil
	}
	r.docs[1] = d
	return &r.docs[1], nil
}

// summaryPart returns the part of the listing's summary of a save of head
// from the status to the JSON's "v": (see session/redis's indexLua and
// appendSummaryDoc).
func summaryPart(head []byte) (string, error) {
	var doc struct {
		Run struct {
			Agent    string            `json:"agent"`
			Turn     int               `json:"turn"`
			Pending  []json.RawMessage `json:"pending"`
			Finished bool              `json:"finished"`
		} `json:"run"`
	}
	if err := json.Unmarshal(head, &doc); err != nil {
		return "", fmt.Errorf("read a recorded head: %w", err)
	}
	status := state.RunUnfinished
	switch {
	case doc.Run.Finished:
		status = state.RunFinished
	case len(doc.Run.Pending) > 0:
		status = state.RunPaused
	}
	agent, err := json.Marshal(doc.Run.Agent)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`:%d:%d:%s{"a":%s,"u":%d,"p":%d,"v":`, status, len(rawSessionID), rawSessionID,
		agent, doc.Run.Turn, len(doc.Run.Pending)), nil
}

// queueSave queues what saveScript writes for s at version v, with s's
// positions those of tool turn j: the head, the pieces, the summary.
func (r *sameRedis) queueSave(ctx context.Context, p goredis.Pipeliner, s *rawSave, doc string, v int64, j int) {
	p.HSet(ctx, r.head, "v", v, "d", s.head)
	if len(s.pieces) > 0 {
		// The fields and values are cut from one string, at ends.
		b, ends := r.buf[:0], r.ends[:0]
		for _, pc := range s.pieces {
			b = strconv.AppendInt(b, shifted(pc.Seq, j), 10)
			ends = append(ends, len(b))
			b = append(strconv.AppendInt(b, v, 10), ':')
			b = append(b, pc.Data...)
			ends = append(ends, len(b))
		}
		r.buf, r.ends = b, ends
		all := string(b)
		fields := make([]any, 0, len(ends))
		at := 0
		for _, end := range ends {
			fields = append(fields, all[at:end])
			at = end
		}
		p.HSet(ctx, r.pieces, fields...)
	}
	p.HSet(ctx, r.sum, rawRunID, r.serial+doc+strconv.FormatInt(v, 10)+"}")
}

// queueAppend queues what saveAppendScript's append writes for items at
// their positions in tool turn j, stamped stamp: their members and
// stamps, the calls' members and the outputs hash's fields of the calls
// and of the outputs, each output answering the latest call of its ID
// before it in the batch (a batch of the crash-safe tool turn: a call and
// its output). Every string is cut from one buffer, written in one go.
func (r *sameRedis) queueAppend(ctx context.Context, p goredis.Pipeliner, items []state.Item, stamp int64, j int) error {
	if len(items) > maxSameItems {
		return fmt.Errorf("a batch of %d items, at most %d", len(items), maxSameItems)
	}
	// Each item's strings, ends in b: its position, its member, then for
	// a call or an output the calls member of its call or of the call it
	// answers ("ref": place, ID key, the call's Seq), "r" and its
	// position, and "c" (a call) or "a" (an output) and ref.
	const (
		endPos = iota
		endMember
		endRef
		endR
		endCA
		nEnds
	)
	var ends [nEnds * maxSameItems]int
	b := r.buf[:0]
	for i, it := range items {
		e := ends[nEnds*i : nEnds*i+nEnds]
		start := len(b)
		b = appendHex16(append(b, r.place...), shifted(it.Seq(), j))
		e[endPos] = len(b)
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(it.Kind().String())))
		b = append(b, it.Kind().String()...)
		b = binary.AppendUvarint(b, uint64(len(it.Name())))
		b = append(b, it.Name()...)
		b = it.AppendRaw(b)
		e[endMember] = len(b)
		k := it.Kind()
		if !k.IsCall() && !k.IsOutput() {
			e[endRef], e[endR], e[endCA] = len(b), len(b), len(b)
			continue
		}
		call := i
		if k.IsOutput() {
			if call = callOf(items, i); call < 0 {
				return fmt.Errorf("the output at %d answers no call of the batch", it.Seq())
			}
		}
		ref := len(b)
		id := it.CallID()
		b = appendHex(append(b, r.place...), uint64(len(id)), 8)
		b = appendHex16(append(b, id...), shifted(items[call].Seq(), j))
		e[endRef] = len(b)
		b = append(append(b, 'r'), b[start:e[endPos]]...)
		e[endR] = len(b)
		ca := byte('c')
		if k.IsOutput() {
			ca = 'a'
		}
		b = append(append(b, ca), b[ref:e[endRef]]...)
		e[endCA] = len(b)
	}
	r.buf = b
	all := string(b)
	members := make([]goredis.Z, len(items))
	stamped := make([]goredis.Z, len(items))
	var calls []goredis.Z
	fields := make([]any, 0, 4*len(items))
	at := 0
	for i, it := range items {
		e := ends[nEnds*i : nEnds*i+nEnds]
		members[i] = goredis.Z{Member: all[at:e[endMember]]}
		stamped[i] = goredis.Z{Score: float64(stamp), Member: all[at:e[endPos]]}
		if it.Kind().IsCall() {
			calls = append(calls, goredis.Z{Member: all[e[endMember]:e[endRef]]})
			fields = append(fields, all[e[endRef]:e[endR]], all[e[endR]:e[endCA]])
		}
		at = e[endCA]
	}
	at = 0
	for i, it := range items {
		e := ends[nEnds*i : nEnds*i+nEnds]
		if it.Kind().IsOutput() {
			fields = append(fields, all[e[endMember]:e[endRef]], all[at+len(r.place):e[endPos]],
				all[e[endRef]:e[endR]], all[e[endR]:e[endCA]])
		}
		at = e[endCA]
	}
	p.Incr(ctx, r.stamp)
	p.ZAdd(ctx, r.items, members...)
	p.ZAdd(ctx, r.stamps, stamped...)
	if len(calls) > 0 {
		p.ZAdd(ctx, r.calls, calls...)
	}
	if len(fields) > 0 {
		p.HSet(ctx, r.outputs, fields...)
	}
	return nil
}

// maxSameItems is the most items a commit of sameRedis appends.
const maxSameItems = 16

// callOf returns the index of the latest call before items[o] with its
// call ID, or -1.
func callOf(items []state.Item, o int) int {
	for c := o - 1; c >= 0; c-- {
		if items[c].Kind().IsCall() && items[c].CallID() == items[o].CallID() {
			return c
		}
	}
	return -1
}

// appendHex appends v in width lower-case hex digits, zero-padded.
func appendHex(b []byte, v uint64, width int) []byte {
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		b = append(b, digits[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// appendHex16 appends seq in 16 hex digits, as a position holds it.
func appendHex16(b []byte, seq int64) []byte { return appendHex(b, uint64(seq), 16) }

// turn writes tool turn j as the store does, in its two round trips: the
// save before the tool (saveScript's writes), then the commit
// (saveAppendScript's: the append's, then the save's).
func (r *sameRedis) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	docs, err := r.docsOf(w)
	if err != nil {
		return err
	}
	if _, err := r.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		r.queueSave(ctx, p, &w.save, docs.save, v, j)
		return nil
	}); err != nil {
		return err
	}
	r.count++
	_, err = r.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		if err := r.queueAppend(ctx, p, w.items, r.count, j); err != nil {
			return err
		}
		r.queueSave(ctx, p, &w.commit, docs.commit, v+1, j)
		return nil
	})
	return err
}

func (r *sameRedis) close() { _ = r.client.Close() }
