package state

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/state/internal/wire"
)

// The checkpoint format this code writes. A checkpoint is a JSON object
//
//	{"schema": "turnkit.run", "version": 1, "run": {...}, "signature": {...}}
//
// where signature is present only when the checkpoint was signed (see
// [WithSigningKey]). Unmarshal reads this version, refuses newer ones with
// a [*VersionError], and reads older ones through migrations (see
// [WithMigration]).
const (
	SchemaName    = "turnkit.run"
	SchemaVersion = 1
)

// DefaultMaxSize is the size limit of a checkpoint Unmarshal accepts unless
// [WithMaxSize] sets another.
const DefaultMaxSize = 32 << 20

// A MarshalOption configures [Marshal].
type MarshalOption interface {
	applyMarshal(marshalConfig) marshalConfig
}

// An UnmarshalOption configures [Unmarshal].
type UnmarshalOption interface{ applyUnmarshal(*unmarshalConfig) }

type marshalConfig struct {
	indent bool
	keyID  string
	key    []byte
	sealer Sealer // what a Delta's parts are sealed with (seal.go); nil: plaintext
	// binaryParts keeps a sealed Delta's pieces and context as bytes
	// (WithBinaryParts), not as JSON strings of base64
	binaryParts bool
}

type unmarshalConfig struct {
	maxSize    int64
	keys       map[string][]byte
	migrations map[int]Migration
	sealer     Sealer // what Assemble opens stored parts with (seal.go); nil: plaintext
}

// Marshal options take and return the config by value: a pointer handed
// to an interface method escapes, and stores apply their options on every
// save.
type marshalOptionFunc func(marshalConfig) marshalConfig

func (f marshalOptionFunc) applyMarshal(c marshalConfig) marshalConfig { return f(c) }

func newMarshalConfig(opts []MarshalOption) marshalConfig {
	var cfg marshalConfig
	for _, o := range opts {
		if o != nil {
			cfg = o.applyMarshal(cfg)
		}
	}
	return cfg
}

type unmarshalOptionFunc func(*unmarshalConfig)

func (f unmarshalOptionFunc) applyUnmarshal(c *unmarshalConfig) { f(c) }

// WithIndent makes Marshal write indented JSON for people to read. The
// signature, if any, does not depend on layout.
func WithIndent() MarshalOption {
	return marshalOptionFunc(func(c marshalConfig) marshalConfig { c.indent = true; return c })
}

// WithMaxSize sets the largest checkpoint, in bytes, that Unmarshal
// accepts (default [DefaultMaxSize]); larger input fails with
// [ErrTooLarge] before it is parsed. Values below 1 keep the default.
func WithMaxSize(n int64) UnmarshalOption {
	return unmarshalOptionFunc(func(c *unmarshalConfig) {
		if n > 0 {
			c.maxSize = n
		}
	})
}

// A Migration rewrites the "run" object of a checkpoint of one schema
// version into the next version's shape. It gets and returns raw JSON.
type Migration func(run json.RawMessage) (json.RawMessage, error)

// WithMigration registers the migration from schema version from to
// from+1. Unmarshal applies registered migrations in order to bring an
// older checkpoint to [SchemaVersion]; a checkpoint with a gap in the chain
// fails with a [*VersionError]. A nil migration is ignored.
func WithMigration(from int, m Migration) UnmarshalOption {
	return unmarshalOptionFunc(func(c *unmarshalConfig) {
		if m == nil {
			return
		}
		if c.migrations == nil {
			c.migrations = make(map[int]Migration)
		}
		c.migrations[from] = m
	})
}

// The wire shapes of schema version 1, declared once in package wire, and
// the tables of their members that the fast paths work from.
type (
	wireEnvelope  = wire.Envelope
	wireSignature = wire.Signature
	wireRun       = wire.Run[Kind, Boundary, Approval, Decision, GuardrailResult, Usage, ModelCall]
	wireItem      = wire.Item[Kind]
)

var (
	runType        = reflect.TypeFor[wireRun]()
	runFields      = wire.FieldsOf(runType)
	decodedRunType = wire.Decoded(runType) // what the encoding/json path decodes into
	rawRunType     = wire.Raw(runType)     // what locate decodes into
	rawListType    = reflect.TypeFor[[]json.RawMessage]()
	rawType        = reflect.TypeFor[json.RawMessage]()
	wireItemType   = reflect.TypeFor[wireItem]()

	envFields      = wire.FieldsOf(reflect.TypeFor[wireEnvelope]())
	sigFields      = wire.FieldsOf(reflect.TypeFor[wireSignature]())
	itemFields     = wire.FieldsOf(reflect.TypeFor[wireItem]())
	boundaryFields = wire.FieldsOf(reflect.TypeFor[Boundary]())
	usageFields    = wire.FieldsOf(reflect.TypeFor[Usage]())

	envSchema, envVersion, envRun, envSignature = envFields.Pos("Schema"), envFields.Pos("Version"), envFields.Pos("Run"), envFields.Pos("Signature")
	itemSeq, itemKind, itemName, itemRaw        = itemFields.Pos("Seq"), itemFields.Pos("Kind"), itemFields.Pos("Name"), itemFields.Pos("Raw")
)

// Marshal encodes r as a checkpoint of schema [SchemaName], version
// [SchemaVersion]: every part of the run, so that [Unmarshal] in another
// process returns a run that resumes exactly as r would. A run with an
// empty ID fails with [ErrNoRunID]. It takes a
// consistent snapshot under r's lock and does not change r. Items' JSON is
// written compacted.
func Marshal(r *Run, opts ...MarshalOption) ([]byte, error) {
	if r == nil {
		return nil, errors.New("state: marshal nil run")
	}
	cfg := newMarshalConfig(opts)
	s, err := r.wire()
	if err != nil {
		return nil, err
	}
	return marshalWire(&s, &cfg)
}

// marshalWire encodes a snapshot; stores use it to write a new version
// without touching the caller's run before the write succeeded.
func marshalWire(s *snapshot, cfg *marshalConfig) ([]byte, error) {
	if s.ID == "" {
		return nil, ErrNoRunID
	}
	out, ok := appendCheckpoint(make([]byte, 0, checkpointSize(s, cfg)), s, cfg) // s stays on the stack: no reflection reaches it
	if !ok {
		return marshalWireJSON(s.wired(), cfg)
	}
	return indent(out, s.ID, cfg)
}

// marshalWireJSON is marshalWire with encoding/json: the reference for
// appendCheckpoint (codec_fast_marshal.go), and the path of its errors.
func marshalWireJSON(w wireRun, cfg *marshalConfig) ([]byte, error) {
	payload, err := json.Marshal(&w)
	if err != nil {
		return nil, fmt.Errorf("state: marshal run %s: %w", w.ID, err)
	}
	env := wireEnvelope{Schema: SchemaName, Version: SchemaVersion, Run: payload}
	if cfg.key != nil {
		env.Signature = sign(cfg.keyID, cfg.key, SchemaName, SchemaVersion, payload)
	}
	out, err := json.Marshal(&env)
	if err != nil {
		return nil, fmt.Errorf("state: marshal run %s: %w", w.ID, err)
	}
	return indent(out, w.ID, cfg)
}

// indent lays a checkpoint out for people when cfg asks for it.
func indent(out []byte, id string, cfg *marshalConfig) ([]byte, error) {
	if !cfg.indent {
		return out, nil
	}
	var buf bytes.Buffer
	buf.Grow(2 * len(out))
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return nil, fmt.Errorf("state: marshal run %s: %w", id, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// A snapshot is a run in its wire shape with its item lists as the run
// holds them: the run's own arrays, capped at their lengths, which the
// run only ever appends to past their lengths or replaces (see
// [Run.Clone]), so that a snapshot copies no item. The wire run's own
// item lists stay nil: the fast path writes the items from here, and
// [snapshot.wired] fills them for encoding/json.
type snapshot struct {
	wireRun
	input, items, context []Item
	// own is the record turnkit adds to the run's extension records
	// under ownKey (a delta's record, a whole checkpoint's history note):
	// canonical JSON, made here, which the fast path writes as it is, in
	// the place of any record of the run under that key. Kept out of the
	// map, which a snapshot otherwise shares with nobody but has to make
	// for it, and whose values the fast path scans.
	ownKey string
	own    json.RawMessage
}

// wired returns the snapshot's wire run with its item lists filled and
// its own record among the extension records.
func (s *snapshot) wired() wireRun {
	w := s.wireRun
	w.Input, w.Items, w.Context = wireItems(s.input), wireItems(s.items), wireItems(s.context)
	if s.own != nil {
		w.Extension = maps.Clone(w.Extension)
		if w.Extension == nil {
			w.Extension = make(map[string]json.RawMessage, 1)
		}
		w.Extension[s.ownKey] = s.own
	}
	return w
}

// capped returns items capped at their length.
func capped(items []Item) []Item { return items[:len(items):len(items)] }

// wire takes a snapshot of r in its wire shape, with its whole context:
// a run whose context is its session's history carries a note saying so
// (history.go), and one whose context is not read yet fails.
func (r *Run) wire() (snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.ctxPending; p != nil {
		return snapshot{}, &HistoryError{RunID: r.id, SessionID: p.Session, Count: p.Count, Reason: "marshal", Err: ErrHistoryPending}
	}
	s := r.wireLocked(true)
	if r.ctxRef {
		note, err := json.Marshal(noteHistory{Session: r.sessionID, Count: len(r.context), Stamp: r.ctxStamp})
		if err != nil {
			return snapshot{}, fmt.Errorf("state: marshal run %s: %w", r.id, err)
		}
		s.ownKey, s.own = historyKey, note
	}
	return s, nil
}

// wireLocked is wire under r's lock; without items it leaves the item and
// context lists empty (a delta's head).
func (r *Run) wireLocked(items bool) snapshot {
	s := snapshot{wireRun: wireRun{
		ID: r.id, Agent: r.agent, Turn: r.turn, MaxTurns: r.maxTurns, Version: r.version,
		NextSeq: r.nextSeq, Response: r.resp, ContextFrom: r.ctxFrom,
		Pending: slices.Clip(r.pending), Decisions: slices.Clone(r.decisions), // pending: copy-on-write (addPending)
		Usage: r.usage, SessionID: r.sessionID, Watermark: r.watermark, Trace: maps.Clone(r.trace),
		Final: r.final, Finished: r.finished, Extension: maps.Clone(r.extension),
	}}
	s.input = capped(r.input)
	// A delta's head leaves out the guardrail results and the model
	// calls, which go as pieces.
	if items {
		s.items, s.context = capped(r.items), capped(r.context)
		s.Guardrails = cloneGuards(r.guards)
		// The calls are only ever appended to (addModelCall), never
		// changed in place: their list up to its length, capped there,
		// is a copy that costs nothing.
		s.ModelCalls = r.calls[:len(r.calls):len(r.calls)]
	}
	if s.Pending == nil {
		s.Pending = []Approval{}
	}
	if s.Decisions == nil {
		s.Decisions = []Decision{}
	}
	if s.Guardrails == nil {
		s.Guardrails = []GuardrailResult{}
	}
	return s
}

// wireItems returns the wire forms of items, for encoding/json.
func wireItems(items []Item) []wireItem {
	out := make([]wireItem, 0, len(items))
	for _, it := range items {
		out = append(out, wireItemOf(it))
	}
	return out
}

// Unmarshal decodes a checkpoint written by [Marshal] into a new Run.
//
// It is strict and never panics: input over the size limit fails with
// [ErrTooLarge]; truncated, corrupted or mistyped input, unknown fields,
// keys that name a field in other letter case (also [ErrKeyCase]: the
// format's keys match exactly) and missing required fields fail with a
// [*DecodeError] wrapping [ErrMalformed] with the JSON path of the
// offending value (for a syntax
// error, such as NaN, garbage or nesting too deep, the value it occurs
// in); a run whose parts do not fit together or that [Marshal] would
// refuse (an empty run ID, a guardrail result without a stage, positions not strictly
// increasing or not reserved, a response boundary out of range, a pending
// approval that does not name an unanswered tool call at its position, a
// decision for a call the run does not have, an output without its call, a
// negative usage counter) fails with a [*DecodeError] wrapping
// [ErrInvalid], and also [ErrDuplicateOutput] for a second output of one
// call (an output answers the latest call with its ID before it) or
// [ErrAlreadyDecided] for a second exact decision on a call that
// contradicts the first; another schema or a newer version
// fails with a [*VersionError]; with verification keys (see
// [WithVerifyKeys]) an edited, unsigned or unknown-key checkpoint fails
// with a [*SignatureError]. The returned run shares nothing with data.
//
// Bad input costs at most a bounded number of linear passes over data,
// and a syntax error no decoding at all beyond the fast path's.
func Unmarshal(data []byte, opts ...UnmarshalOption) (*Run, error) {
	cfg := newUnmarshalConfig(opts)
	if int64(len(data)) > cfg.maxSize {
		return nil, &DecodeError{Path: "$", Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), cfg.maxSize)}
	}
	r, done, gaveUp, err := unmarshalFast(data, cfg.keys)
	if done {
		return r, err
	}
	return unmarshalJSON(data, &cfg, fastAfter(gaveUp))
}

// fastUse is how much of the fast path unmarshalJSON may use.
type fastUse uint8

const (
	// noFast is encoding/json alone: the reference.
	noFast fastUse = iota
	// fastLocate uses the fast path only where locate looks for an
	// error: a list item it reads whole holds none, and is not decoded
	// again.
	fastLocate
	// fastRun tries the fast path on the (possibly migrated) run object
	// first, then as fastLocate.
	fastRun
)

// fastAfter is the fastUse after unmarshalFast did not read a checkpoint:
// fastLocate if it gave up on the run object itself, fastRun otherwise.
func fastAfter(gaveUp bool) fastUse {
	if gaveUp {
		return fastLocate
	}
	return fastRun
}

func newUnmarshalConfig(opts []UnmarshalOption) unmarshalConfig {
	if len(opts) == 0 {
		// Without options nothing takes the config's address, which an
		// option's interface method would move to the heap.
		return unmarshalConfig{maxSize: DefaultMaxSize}
	}
	cfg := &unmarshalConfig{maxSize: DefaultMaxSize}
	for _, o := range opts {
		if o != nil {
			o.applyUnmarshal(cfg)
		}
	}
	return *cfg
}

// unmarshalJSON is Unmarshal with encoding/json, after the size check: the
// reference for unmarshalFast (with noFast), and the path of every error.
// fast says where it may use the fast path (see fastUse).
func unmarshalJSON(data []byte, cfg *unmarshalConfig, fast fastUse) (*Run, error) {
	var env wireEnvelope
	if err := decodeStrict(data, &env, "$"); err != nil {
		return nil, err
	}
	if env.Schema != SchemaName {
		return nil, &VersionError{Schema: env.Schema, Version: env.Version}
	}
	if env.Run == nil || string(env.Run) == "null" {
		return nil, malformed("$.run", "missing")
	}
	if cfg.keys != nil {
		if err := verify(cfg.keys, env.Signature, env.Schema, env.Version, env.Run); err != nil {
			return nil, err
		}
	}
	payload := []byte(env.Run)
	for v := env.Version; v != SchemaVersion; v++ {
		m := cfg.migrations[v]
		if v > SchemaVersion || m == nil {
			return nil, &VersionError{Schema: env.Schema, Version: env.Version}
		}
		next, err := m(slices.Clone(payload))
		if err != nil {
			return nil, &DecodeError{Path: "$.run", Err: fmt.Errorf("%w: migration from version %d: %w", ErrMalformed, v, err)}
		}
		payload = next
	}
	if fast == fastRun {
		fd := itemDecs.Get().(*fastDec)
		defer fd.release()
		s := jsonscan.Scanner{B: payload}
		s.SkipWS()
		if r, ok, err := fd.run(&s); ok && s.End() {
			return r, err
		}
	}
	return decodeRunPayload(payload, fast != noFast)
}

// decodeRunPayload decodes a run object with encoding/json in one pass.
// An error that encoding/json places (a syntax or type error) has its
// path; one it does not (an unknown field, a bad verdict) is looked for
// element by element, with one more pass (locate; with fast, skipping
// the list items the fast path reads).
func decodeRunPayload(payload []byte, fast bool) (*Run, error) {
	d := reflect.New(decodedRunType)
	if err := decodeStrict(payload, d.Interface(), "$.run"); err != nil {
		if de := (*DecodeError)(nil); errors.As(err, &de) && de.Offset > 0 {
			return nil, err
		}
		if lerr := locate(payload, fast); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	var f wireRun
	if missing := wire.Fill(&f, d.Elem(), runFields); missing != "" {
		return nil, malformed("$.run."+missing, "missing")
	}
	var lists [3][]Item
	for i, l := range []struct {
		ws   []wireItem
		name string
	}{{f.Input, "Input"}, {f.Items, "Items"}, {f.Context, "Context"}} {
		var err error
		if lists[i], err = decodeItems(l.ws, "$.run."+runFields.Name(l.name)); err != nil {
			return nil, err
		}
	}
	return newDecodedRun(&f, lists[0], lists[1], lists[2])
}

// locate decodes a run object whose one-pass decoding failed, list
// element by list element, then object by object, and returns the error
// with the element's path. With fast, an item of a list that the fast
// path reads whole is not decoded: what it reads, encoding/json reads
// alike (FuzzUnmarshalMatchesReference holds Unmarshal, which locates
// so, to the reference's errors), so the error is elsewhere. A run
// refused for one item of a thousand is then refused in a fraction of
// the time that decoding each item again took.
func locate(payload []byte, fast bool) error {
	d := reflect.New(rawRunType)
	if err := decodeStrict(payload, d.Interface(), "$.run"); err != nil {
		return err
	}
	var fd *fastDec
	if fast {
		fd = itemDecs.Get().(*fastDec)
		defer fd.release()
	}
	for _, lists := range []bool{true, false} {
		for _, f := range runFields.List {
			v, t, path := d.Elem().Field(f.Index), runType.Field(f.Index).Type, "$.run."+f.Name
			switch {
			case lists && v.Type() == rawListType:
				for i := range v.Len() {
					raw := v.Index(i).Bytes()
					if fd != nil && t.Elem() == wireItemType && fd.readsItem(raw) {
						continue
					}
					if err := decodeOne(raw, reflect.New(t.Elem()).Interface(), path+"["+strconv.Itoa(i)+"]"); err != nil {
						return err
					}
				}
			case !lists && v.Type() == rawType:
				if err := decodeOne(v.Bytes(), reflect.New(t).Interface(), path); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// decodeOne decodes raw into v strictly; a missing or null raw leaves v
// as it is.
func decodeOne(raw []byte, v any, path string) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	return decodeStrict(raw, v, path)
}

// newDecodedRun builds a run from a decoded run object (whose ID and
// NextSeq were present) and its decoded item lists, and checks it.
func newDecodedRun(d *wireRun, input, items, context []Item) (*Run, error) {
	r := &Run{
		id: d.ID, agent: d.Agent, turn: d.Turn, maxTurns: d.MaxTurns, version: d.Version,
		nextSeq: d.NextSeq, resp: d.Response, ctxFrom: d.ContextFrom, usage: d.Usage,
		pending: nilIfEmpty(d.Pending), decisions: nilIfEmpty(d.Decisions), guards: nilIfEmpty(d.Guardrails),
		calls:     nilIfEmpty(d.ModelCalls),
		sessionID: d.SessionID, watermark: d.Watermark, trace: d.Trace, final: d.Final, finished: d.Finished,
		input: input, items: items, context: context,
	}
	for i := range r.guards {
		if r.guards[i].Info != nil {
			r.guards[i].Info = compact(r.guards[i].Info)
		}
	}
	if len(d.Extension) > 0 {
		r.extension = make(map[string]json.RawMessage, len(d.Extension))
		for k, v := range d.Extension {
			if v == nil || string(v) == "null" {
				return nil, malformed("$.run.extension."+k, "null")
			}
			r.extension[k] = compact(v)
		}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	if err := r.takeHistoryNote(); err != nil {
		return nil, err
	}
	return r, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// check verifies that a decoded run's parts fit together, and rebuilds the
// ledger of completed calls from the output items.
func (r *Run) check() error {
	if r.id == "" {
		return invalid("$.run.id", "empty run ID")
	}
	if r.nextSeq < 1 {
		return invalid("$.run.next_seq", "%d, want at least 1", r.nextSeq)
	}
	if err := r.usage.check(); err != nil {
		return err
	}
	// The maps are made here, not returned by the steps, so that they do
	// not escape: a load allocates no more for being read in steps.
	calls := make(map[string]int, len(r.items)/2)
	if err := r.checkItems(calls); err != nil {
		return err
	}
	if err := r.checkPlaces(); err != nil {
		return err
	}
	if err := r.checkCalls(); err != nil {
		return err
	}
	for i, g := range r.guards {
		if !g.Stage.valid() {
			return invalid(elemPath("guardrails", i)+".stage", "no stage")
		}
	}
	pending := make(map[string]bool, len(r.pending))
	if err := r.checkPending(calls, pending); err != nil {
		return err
	}
	return r.checkDecisions(calls, pending)
}

// checkItems verifies the items' positions and that each call has at most
// one output, and records the outputs in the ledger of completed calls.
// An output answers the latest call with its ID placed before it (so a
// model may reuse a call ID in a later response), and a second output for
// that call is refused, as the Responses API refuses it.
//
// It fills calls with each call ID and the index in items of the latest
// call with it, complemented (^i) once that call has its output.
func (r *Run) checkItems(calls map[string]int) error {
	var prev int64
	for i, it := range r.items {
		if it.seq <= prev {
			return invalid(elemPath("items", i)+".seq", "position %d does not follow %d", it.seq, prev)
		}
		if it.seq >= r.nextSeq {
			return invalid(elemPath("items", i)+".seq", "position %d is not reserved (next_seq %d)", it.seq, r.nextSeq)
		}
		prev = it.seq
		switch {
		case it.kind.IsCall():
			calls[it.callID] = i
		case it.kind.IsOutput():
			c, ok := calls[it.callID]
			if !ok {
				return invalid(elemPath("items", i), "output of call %q has no call before it", it.callID)
			}
			if c < 0 {
				return &DecodeError{Path: elemPath("items", i), Err: fmt.Errorf("%w: %w: call %q at position %d already has an output at position %d",
					ErrInvalid, ErrDuplicateOutput, it.callID, r.items[^c].seq, r.completed[it.callID])}
			}
			calls[it.callID] = ^c
			if r.completed == nil {
				r.completed = make(map[string]int64)
			}
			r.completed[it.callID] = it.seq
		}
	}
	return nil
}

// checkPlaces verifies that the input is among the items and that the
// context's start, the response boundary and the session watermark are
// in range.
func (r *Run) checkPlaces() error {
	for i, it := range r.input {
		if x, found := r.itemAtLocked(it.seq); !found || !x.Equal(it) {
			return invalid(elemPath("input", i), "input item at position %d is not among the items", it.seq)
		}
	}
	if r.ctxFrom < 0 || r.ctxFrom > len(r.items) {
		return invalid("$.run.context_from", "%d is outside the %d items", r.ctxFrom, len(r.items))
	}
	if b := r.resp; b != (Boundary{}) && (b.Start < 1 || b.Start > b.End || b.End > b.OutputsEnd || b.OutputsEnd > r.nextSeq) {
		return invalid("$.run.response", "boundary %+v is out of range (next_seq %d)", b, r.nextSeq)
	}
	if r.watermark < 0 || r.watermark >= r.nextSeq {
		return invalid("$.run.session_watermark", "%d is out of range (next_seq %d)", r.watermark, r.nextSeq)
	}
	return nil
}

// checkPending verifies that each pending approval names, once, an
// unanswered call at its position (or a call of a nested run), with its
// output position free. calls is [Run.checkItems]' map; pending gets
// the pending call IDs. An element's path is built only for its error.
func (r *Run) checkPending(calls map[string]int, pending map[string]bool) error {
	for i, a := range r.pending {
		if a.CallID == "" || pending[a.CallID] {
			return invalid(elemPath("pending", i), "call ID %q is empty or repeated", a.CallID)
		}
		pending[a.CallID] = true
		if a.IsElicitation() && a.Elicitation.Server == "" {
			return invalid(elemPath("pending", i)+".elicitation", "request of call %q names no server", a.CallID)
		}
		if a.Owner != "" {
			continue // the call is in the owner's nested run
		}
		it, ok := r.itemAtLocked(a.Seq)
		if !ok || !it.kind.approvable() || it.callID != a.CallID || it.name != a.Tool || it.text != a.Arguments {
			return invalid(elemPath("pending", i), "call %q does not match a tool call at position %d", a.CallID, a.Seq)
		}
		if a.OutputSeq <= it.seq || a.OutputSeq >= r.nextSeq {
			return invalid(elemPath("pending", i), "output position %d of call %q is out of range", a.OutputSeq, a.CallID)
		}
		if _, taken := r.itemAtLocked(a.OutputSeq); taken {
			return invalid(elemPath("pending", i), "call %q already has an output at position %d", a.CallID, a.OutputSeq)
		}
		if c, ok := calls[a.CallID]; ok && c < 0 && r.items[^c].seq == a.Seq {
			return &DecodeError{Path: elemPath("pending", i), Err: fmt.Errorf("%w: %w: pending call %q already has an output at position %d",
				ErrInvalid, ErrDuplicateOutput, a.CallID, r.completed[a.CallID])}
		}
	}
	return nil
}

// checkDecisions verifies each decision's shape, that it is on a call the
// run has (calls, pending) or a nested run's, and that no exact decision
// contradicts an earlier one on its call: the first stands (see
// [Run.Approve]).
func (r *Run) checkDecisions(calls map[string]int, pending map[string]bool) error {
	var exact map[decisionKey]int
	if len(r.decisions) > 1 {
		exact = make(map[decisionKey]int, len(r.decisions))
	}
	for i, d := range r.decisions {
		path := elemPath("decisions", i)
		if exact != nil && !d.Always && d.CallID != "" {
			k := decisionKey{d.Tool, d.CallID, d.Answer.Request}
			if j, ok := exact[k]; ok && r.decisions[j] != d {
				return &DecodeError{Path: path, Err: fmt.Errorf("%w: %w: call %q was %s by decision %d, which stands",
					ErrInvalid, ErrAlreadyDecided, d.CallID, r.decisions[j].Verdict, j)}
			} else if !ok {
				exact[k] = i
			}
		}
		if err := checkDecision(d, path); err != nil {
			return err
		}
		if !d.Always && d.CallID != "" {
			if _, ok := calls[d.CallID]; !ok && !pending[d.CallID] && d.Owner == "" {
				return invalid(path, "call %q is not among the items", d.CallID)
			}
		}
	}
	return nil
}

// checkDecision verifies one decision's shape: a verdict; an answer that
// names a call and a request and has a valid action, content and
// verdict; an always decision that names a tool and no call; an exact one
// that names a call.
func checkDecision(d Decision, path string) error {
	switch {
	case d.Verdict != Approved && d.Verdict != Rejected:
		return invalid(path, "no verdict")
	case d.IsAnswer() && (d.Always || d.Answer.Request == "" || checkAnswer(d.Answer.Action, d.Answer.Content) != nil ||
		d.Verdict != answerVerdict(d.Answer.Action)):
		return invalid(path+".answer", "an answer names a call and a request, and has a valid action, content and verdict")
	case d.Always:
		if d.Tool == "" || d.CallID != "" {
			return invalid(path, "an always decision names a tool and no call")
		}
	case d.CallID == "":
		return invalid(path, "an exact decision without a call ID")
	}
	return nil
}

// decisionKey names the call an exact decision is on, and for an answer
// the request it answers.
type decisionKey struct{ tool, callID, request string }

// check refuses negative counters: Marshal never writes them.
func (u Usage) check() error {
	for _, f := range [...]struct {
		name string
		v    int64
	}{
		{"requests", u.Requests}, {"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens},
		{"reasoning_tokens", u.ReasoningTokens}, {"cached_tokens", u.CachedTokens},
		{"cache_write_tokens", u.CacheWriteTokens},
	} {
		if f.v < 0 {
			return invalid("$.run.usage."+f.name, "negative count %d", f.v)
		}
	}
	return nil
}

// itemAtLocked returns the item at position seq. A position past the
// last item, as a turn's next output position is, answers in O(1), and so
// does one where the items are numbered without a gap from the first;
// others by binary search.
func (r *Run) itemAtLocked(seq int64) (Item, bool) {
	n := len(r.items)
	if n == 0 || seq > r.items[n-1].seq || seq < r.items[0].seq {
		return Item{}, false
	}
	if i := seq - r.items[0].seq; i < int64(n) && r.items[i].seq == seq {
		return r.items[i], true
	}
	i, found := slices.BinarySearchFunc(r.items, seq, func(x Item, s int64) int { return cmp.Compare(x.seq, s) })
	if !found {
		return Item{}, false
	}
	return r.items[i], true
}

// decodeStrict decodes one JSON value into v, refusing unknown fields,
// keys that name a field only by case folding (see [ErrKeyCase]), trailing
// data and a top-level null, and reports errors at path.
func decodeStrict(data []byte, v any, path string) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return &DecodeError{Path: path, Err: fmt.Errorf("%w: empty input", ErrMalformed)}
	}
	if trimmed[0] != '{' {
		return &DecodeError{Path: path, Err: fmt.Errorf("%w: want an object", ErrMalformed)}
	}
	if !json.Valid(data) {
		// Find the syntax error without decoding (and copying) anything:
		// hostile input costs a scan, not a decoding.
		err := json.Unmarshal(data, &struct{}{})
		if syn := (*json.SyntaxError)(nil); errors.As(err, &syn) && syn.Offset >= int64(len(data)) {
			err = io.ErrUnexpectedEOF
		}
		return decodeErr(data, path, err)
	}
	if key, off := wire.FoldedKey(data, reflect.TypeOf(v), path); key != "" {
		return &DecodeError{Path: key, Offset: off, Err: fmt.Errorf("%w: %w", ErrMalformed, ErrKeyCase)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeErr(data, path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &DecodeError{Path: path, Offset: dec.InputOffset(), Err: fmt.Errorf("%w: trailing data after the object", ErrMalformed)}
	}
	return nil
}

// decodeErr turns an error of encoding/json decoding data (at path) into a
// [*DecodeError] with the JSON path of the value it occurred in, where the
// error says where that is.
func decodeErr(data []byte, path string, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		// Offset counts the offending byte: the input is well-formed before it.
		return &DecodeError{Path: wire.PathAt(data, syn.Offset-1, path), Offset: syn.Offset, Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
	case errors.As(err, &typ):
		// Offset is the end of the mistyped value.
		if typ.Offset > 0 {
			path = wire.PathAt(data, typ.Offset, path)
		} else if typ.Field != "" {
			path += "." + typ.Field
		}
		return &DecodeError{Path: path, Offset: typ.Offset, Err: fmt.Errorf("%w: %s is a JSON %s, want %s", ErrMalformed, path, typ.Value, typ.Type)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &DecodeError{Path: wire.PathAt(data, int64(len(data)), path), Err: fmt.Errorf("%w: truncated", ErrMalformed)}
	}
	return &DecodeError{Path: path, Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
}

func decodeItems(ws []wireItem, path string) ([]Item, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	items := make([]Item, len(ws))
	for i, w := range ws {
		p := path + "[" + strconv.Itoa(i) + "]"
		if w.Kind == 0 {
			return nil, malformed(p+".kind", "missing")
		}
		if w.Raw == nil || string(w.Raw) == "null" {
			return nil, malformed(p+".raw", "missing")
		}
		it, err := parseItemJSON(w.Kind, compact(w.Raw))
		if err != nil {
			return nil, &DecodeError{Path: p + ".raw", Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
		}
		if w.Name != "" {
			if !w.Kind.IsOutput() {
				return nil, malformed(p+".name", "only outputs carry a name")
			}
			it = it.WithName(w.Name)
		}
		items[i] = it.WithSeq(w.Seq)
	}
	return items, nil
}

// compact returns raw without insignificant whitespace; raw is valid JSON.
func compact(raw []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return slices.Clone(raw)
	}
	return buf.Bytes()
}

// elemPath returns the JSON path of element i of the run's list.
func elemPath(list string, i int) string { return "$.run." + list + "[" + strconv.Itoa(i) + "]" }

func malformed(path, what string) error {
	return &DecodeError{Path: path, Err: fmt.Errorf("%w: %s", ErrMalformed, what)}
}

func invalid(path, format string, args ...any) error {
	return &DecodeError{Path: path, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)}
}
