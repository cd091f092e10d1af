package anthropic

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// A hand-written reader of a Messages API body, for the shape the API
// writes: exact member names, strings where strings go, integer counts,
// blocks of the types the adapter reads into items of their own. It
// reads what encoding/json would read into messageBody, with every string
// the response keeps in one allocation (see [arena]); anything it does
// not expect (a member name in another case, a null, a number with a
// fraction, a lone surrogate, a block kept opaque) makes it give up, and
// the body is read by encoding/json instead. FuzzReadMessage holds the
// two to the same result.

// A span is a JSON string's contents in the body, between its quotes
// (esc: with escapes), or a whole JSON value; at and m are where write
// put its text in the arena.
type span struct {
	off, n int
	esc    bool
	at, m  int
}

// A rawBlock is a content block as bodyReader finds it.
type rawBlock struct {
	typ                                       string // one of the known types, interned
	text, id, name, thinking, signature, data span
	input                                     span // the input's JSON value
	hasInput                                  bool
}

// A rawMessage is a body as bodyReader finds it: its first blocks in
// first (no allocation for them), any others in more.
type rawMessage struct {
	id, model, stopReason span
	n                     int
	first                 [4]rawBlock
	more                  []rawBlock
	usage                 usageBody
}

// block returns the message's block i.
func (m *rawMessage) block(i int) *rawBlock {
	if i < len(m.first) {
		return &m.first[i]
	}
	return &m.more[i-len(m.first)]
}

// bodyReader reads b, a JSON value already checked with jsonscan.Valid, from
// i on.
type bodyReader struct {
	b []byte
	i int
}

// Member names each object of the body may have, for keyIndex.
var (
	messageKeys = []string{"id", "model", "stop_reason", "content", "usage"}
	blockKeys   = []string{"type", "text", "id", "name", "input", "thinking", "signature", "data"}
	usageKeys   = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens_details"}
	detailKeys  = []string{"thinking_tokens"}
)

// readMessage reads body into blocks (appended to buf) and the message's
// strings; ok false means the body is to be read by encoding/json.
func readMessage(body []byte, buf []block) (msg messageBody, blocks []block, ok bool) {
	if !jsonscan.Valid(body) {
		return msg, nil, false
	}
	var rm rawMessage
	r := bodyReader{b: body}
	if !r.message(&rm) {
		return msg, nil, false
	}
	var a arena
	a.grow(&rm)
	a.writeMessage(body, &rm)
	s := a.sb.String()
	msg = rm.make(s)
	blocks = buf
	for i := range rm.n {
		blocks = append(blocks, rm.block(i).make(s))
	}
	return msg, blocks, true
}

// writeMessage puts m's strings, its blocks' included, in the arena.
func (a *arena) writeMessage(body []byte, m *rawMessage) {
	a.write(body, &m.id, false)
	a.write(body, &m.model, false)
	a.write(body, &m.stopReason, false)
	for i := range m.n {
		a.writeBlock(body, m.block(i))
	}
}

// writeBlock puts b's strings in the arena.
func (a *arena) writeBlock(body []byte, b *rawBlock) {
	for _, s := range [...]*span{&b.text, &b.id, &b.name, &b.thinking, &b.signature, &b.data} {
		a.write(body, s, false)
	}
	if b.hasInput {
		a.write(body, &b.input, true)
	}
}

// make returns the message whose strings writeMessage put in the arena
// s, without its blocks.
func (m *rawMessage) make(s string) messageBody {
	return messageBody{ID: sub(s, m.id), Model: sub(s, m.model), StopReason: stopReason(sub(s, m.stopReason)), Usage: m.usage}
}

// make returns the block whose strings writeBlock put in the arena s.
func (rb *rawBlock) make(s string) block {
	b := block{
		Type: rb.typ, Text: sub(s, rb.text), ID: sub(s, rb.id), Name: sub(s, rb.name),
		Thinking: sub(s, rb.thinking), Signature: sub(s, rb.signature), Data: sub(s, rb.data),
	}
	if rb.hasInput {
		b.args = sub(s, rb.input)
	}
	return b
}

func sub(s string, sp span) string { return s[sp.at : sp.at+sp.m] }

// stopReasons are the stop reasons the API documents, so that a
// response's is not a string of its own.
var stopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded"}

func stopReason(s string) string {
	for _, r := range stopReasons {
		if s == r {
			return r
		}
	}
	return s
}

// message reads the body's object into m.
func (r *bodyReader) message(m *rawMessage) bool {
	return r.object(messageKeys, func(n int) bool {
		switch messageKeys[n] {
		case "id":
			return r.strOrNull(&m.id)
		case "model":
			return r.strOrNull(&m.model)
		case "stop_reason":
			return r.strOrNull(&m.stopReason)
		case "content":
			return r.content(m)
		default: // "usage"
			return r.usage(&m.usage)
		}
	})
}

// object reads an object member by member: field reads the value of each
// member named in keys (given its index there), other members are
// skipped, and a member named twice, or one encoding/json might match to
// a key in another spelling, refuses the object (the caller falls back to
// encoding/json). keys holds at most 64 names.
func (r *bodyReader) object(keys []string, field func(n int) bool) bool {
	if !r.open('{') {
		return false
	}
	var seen uint64
	for {
		key, done, ok := r.key()
		if !ok {
			return false
		}
		if done {
			return true
		}
		switch n := keyIndex(key, keys); {
		case n < 0:
			ok = r.skip()
		case n >= len(keys), seen&(1<<n) != 0:
			return false
		default:
			seen |= 1 << n
			ok = field(n)
		}
		if !ok {
			return false
		}
	}
}

// content reads the content array's blocks into m.
func (r *bodyReader) content(m *rawMessage) bool {
	if !r.open('[') {
		return false
	}
	for {
		r.ws()
		if r.i < len(r.b) && r.b[r.i] == ',' {
			r.i++
			r.ws()
		}
		if r.i >= len(r.b) {
			return false
		}
		if r.b[r.i] == ']' {
			r.i++
			return true
		}
		var b rawBlock
		if !r.block(&b) {
			return false
		}
		if m.n < len(m.first) {
			m.first[m.n] = b
		} else {
			m.more = append(m.more, b)
		}
		m.n++
	}
}

// block reads one content block of a known type into b.
func (r *bodyReader) block(b *rawBlock) bool {
	var typ span
	ok := r.object(blockKeys, func(n int) bool {
		switch blockKeys[n] {
		case "type":
			return r.strOrNull(&typ) && !typ.esc
		case "text":
			return r.strOrNull(&b.text)
		case "id":
			return r.strOrNull(&b.id)
		case "name":
			return r.strOrNull(&b.name)
		case "input":
			start := r.i
			ok := r.skip()
			b.input, b.hasInput = span{off: start, n: r.i - start}, true
			return ok
		case "thinking":
			return r.strOrNull(&b.thinking)
		case "signature":
			return r.strOrNull(&b.signature)
		default: // "data"
			return r.strOrNull(&b.data)
		}
	})
	if !ok {
		return false
	}
	switch t := r.b[typ.off : typ.off+typ.n]; string(t) {
	case "text", "tool_use", "thinking", "redacted_thinking":
		b.typ = knownType(t)
		return true
	}
	return false // a type kept opaque, or none
}

func knownType(t []byte) string {
	switch string(t) {
	case "text":
		return "text"
	case "tool_use":
		return "tool_use"
	case "thinking":
		return "thinking"
	}
	return "redacted_thinking"
}

// usage reads the usage object into u.
func (r *bodyReader) usage(u *usageBody) bool {
	return r.object(usageKeys, func(n int) bool {
		switch usageKeys[n] {
		case "input_tokens":
			return r.intOrNull(&u.InputTokens)
		case "output_tokens":
			return r.intOrNull(&u.OutputTokens)
		case "cache_creation_input_tokens":
			return r.intOrNull(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return r.intOrNull(&u.CacheReadInputTokens)
		default: // "output_tokens_details"
			return r.object(detailKeys, func(int) bool { return r.intOrNull(&u.OutputTokensDetails.ThinkingTokens) })
		}
	})
}

// keyIndex returnsof key, -1 for a key encoding/json
// would not match to any of them, and len(keys) for one it might match
// in another case (or by Unicode folding): the reader gives up on it.
func keyIndex(key []byte, keys []string) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return len(keys)
		}
	}
	for _, k := range keys {
		if bytes.EqualFold(key, []byte(k)) {
			return len(keys)
		}
	}
	return -1
}

func (r *bodyReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// open reads the byte c that opens an object or an array.
func (r *bodyReader) open(c byte) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != c {
		return false
	}
	r.i++
	return true
}

// key reads the next member's name and its colon in an object whose
// brace has been read; done reports the object's end instead. A name
// with escapes is not read.
func (r *bodyReader) key() (key []byte, done, ok bool) {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == ',' {
		r.i++
		r.ws()
	}
	if r.i >= len(r.b) {
		return nil, false, false
	}
	if r.b[r.i] == '}' {
		r.i++
		return nil, true, true
	}
	var s span
	if !r.str(&s) || s.esc {
		return nil, false, false
	}
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != ':' {
		return nil, false, false
	}
	r.i++
	return r.b[s.off : s.off+s.n], false, true
}

// str reads a string into s: its contents, whether it has escapes. A
// string encoding/json would change (invalid UTF-8, a lone surrogate) or
// a value of another type is not read.
func (r *bodyReader) str(s *span) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return false
	}
	r.i++
	start := r.i
	*s = span{off: start}
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			s.n = r.i - start
			r.i++
			return true
		case c == '\\':
			s.esc = true
			n := escapeLen(r.b[r.i:])
			if n == 0 {
				return false
			}
			r.i += n
		case c >= utf8.RuneSelf:
			ru, n := utf8.DecodeRune(r.b[r.i:])
			if ru == utf8.RuneError && n == 1 {
				return false
			}
			r.i += n
		default:
			r.i++
		}
	}
	return false
}

// escapeLen returns the length of the escape b starts with, a \u escape
// of a surrogate taking its pair; 0 for a lone surrogate.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	r1 := hex4(b[2:])
	if r1 < 0 {
		return 0
	}
	if !utf16.IsSurrogate(rune(r1)) {
		return 6
	}
	if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0
	}
	r2 := hex4(b[8:])
	if r2 < 0 || utf16.DecodeRune(rune(r1), rune(r2)) == utf8.RuneError {
		return 0
	}
	return 12
}

// hex4 returns the value of the four hex digits b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		v = v<<4 | int(c)
	}
	return v
}

// null reads a null, which encoding/json leaves a string or a number
// unchanged for: as if the member were not there.
func (r *bodyReader) null() bool {
	r.ws()
	if bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += 4
		return true
	}
	return false
}

// strOrNull reads a string into s, or a null.
func (r *bodyReader) strOrNull(s *span) bool { return r.null() || r.str(s) }

// intOrNull reads an integer into v, or a null.
func (r *bodyReader) intOrNull(v *int64) bool {
	if r.null() {
		return true
	}
	n, ok := r.int()
	if ok {
		*v = n
	}
	return ok
}

// int reads an integer; a number with a fraction or an exponent, one out
// of int64's range, or a value of another type is not read.
func (r *bodyReader) int() (int64, bool) {
	r.ws()
	neg := r.i < len(r.b) && r.b[r.i] == '-'
	if neg {
		r.i++
	}
	var v int64
	n := 0
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		if n == 18 {
			return 0, false
		}
		v = v*10 + int64(r.b[r.i]-'0')
		r.i++
		n++
	}
	if n == 0 || (r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E')) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// skip reads past a value of any type.
func (r *bodyReader) skip() bool {
	r.ws()
	if r.i >= len(r.b) {
		return false
	}
	switch r.b[r.i] {
	case '"':
		return r.strAny()
	case '{', '[':
		depth := 0
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					r.i++
					return true
				}
			case '"':
				if !r.strAny() {
					return false
				}
				continue
			}
			r.i++
		}
		return false
	}
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		r.i++
	}
	return true
}

// strAny reads past a string the body does not keep: the body is valid
// JSON, so only its end is looked for.
func (r *bodyReader) strAny() bool {
	r.i++
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case '"':
			r.i++
			return true
		case '\\':
			r.i++
		}
		r.i++
	}
	return false
}

// An arena holds every string a response keeps in one allocation.
type arena struct{ sb strings.Builder }

// grow makes room for m's strings: their text is at most as long as
// their JSON.
func (a *arena) grow(m *rawMessage) { a.sb.Grow(m.size()) }

// size is the length of m's strings' JSON.
func (m *rawMessage) size() int {
	n := m.id.n + m.model.n + m.stopReason.n
	for i := range m.n {
		n += m.block(i).size()
	}
	return n
}

// size is the length of b's strings' JSON.
func (b *rawBlock) size() int {
	return b.text.n + b.id.n + b.name.n + b.thinking.n + b.signature.n + b.data.n + b.input.n
}

// write puts s's text (its JSON value compacted when value) in the
// arena and records where.
func (a *arena) write(body []byte, s *span, value bool) {
	s.at = a.sb.Len()
	raw := body[s.off : s.off+s.n]
	switch {
	case value:
		compact(&a.sb, raw)
	case s.esc:
		unescape(&a.sb, raw)
	default:
		a.sb.Write(raw)
	}
	s.m = a.sb.Len() - s.at
}

// compact writes the valid JSON value raw without the spaces between its
// tokens, as json.Compact does.
func compact(sb *strings.Builder, raw []byte) {
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			sb.WriteByte(c)
			switch c {
			case '\\':
				i++
				sb.WriteByte(raw[i])
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inStr = true
		}
		sb.WriteByte(c)
	}
}

// unescape writes the text of a JSON string's contents raw, whose
// escapes bodyReader.str checked.
func unescape(sb *strings.Builder, raw []byte) {
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			sb.Write(raw)
			return
		}
		sb.Write(raw[:i])
		raw = raw[i:]
		switch raw[1] {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r1 := rune(hex4(raw[2:]))
			if utf16.IsSurrogate(r1) {
				sb.WriteRune(utf16.DecodeRune(r1, rune(hex4(raw[8:]))))
				raw = raw[12:]
				continue
			}
			sb.WriteRune(r1)
			raw = raw[6:]
			continue
		default: // '"', '\\', '/'
			sb.WriteByte(raw[1])
		}
		raw = raw[2:]
	}
}

// Member names of a stream event and of its delta, for
// keyIndex: those of streamEvent.
var (
	eventKeys = []string{"type", "index", "message", "content_block", "delta", "usage", "error"}
	deltaKeys = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason"}
)

// eventScratch holds what readEvent reads, reused from event to event.
type eventScratch struct {
	raw   rawMessage
	blk   rawBlock
	msg   messageBody
	block block
	usage usageBody
}

// readEvent reads a stream event's data into ev (zero) as encoding/json
// would, its message, block and usage into sc, with the strings the
// stream keeps (a message's ID and model, a block's) in one allocation;
// ok false means the event is to be read by encoding/json. It reads the
// events that start a message or a block and the message's delta; an
// error event, or a block kept opaque, is left to encoding/json.
func readEvent(data []byte, ev *streamEvent, sc *eventScratch) bool {
	if !jsonscan.Valid(data) {
		return false
	}
	r := bodyReader{b: data}
	var (
		typ, stop          span
		msg, blk, hasUsage bool
	)
	ok := r.object(eventKeys, func(n int) bool {
		switch eventKeys[n] {
		case "type":
			return r.strOrNull(&typ) && !typ.esc
		case "index":
			var i int64
			ok := r.intOrNull(&i)
			ev.Index = int(i)
			return ok
		case "message":
			sc.raw, msg = rawMessage{}, true
			return r.message(&sc.raw)
		case "content_block":
			sc.blk, blk = rawBlock{}, true
			return r.block(&sc.blk)
		case "delta":
			return r.delta(&stop)
		case "usage":
			sc.usage, hasUsage = usageBody{}, true
			return r.usage(&sc.usage)
		default: // "error"
			return false
		}
	})
	if !ok {
		return false
	}
	ev.Type = internedType(data[typ.off : typ.off+typ.n])
	sc.keep(data, ev, stop, msg, blk, hasUsage)
	return true
}

// keep puts in ev what readEvent read into sc: the message (when msg),
// the block (blk), the usage (usage) and the stop reason, their strings
// in one arena.
func (sc *eventScratch) keep(data []byte, ev *streamEvent, stop span, msg, blk, usage bool) {
	var a arena
	n := stop.n
	if msg {
		n += sc.raw.size()
	}
	if blk {
		n += sc.blk.size()
	}
	a.sb.Grow(n)
	if msg {
		a.writeMessage(data, &sc.raw)
	}
	if blk {
		a.writeBlock(data, &sc.blk)
	}
	a.write(data, &stop, false)
	s := a.sb.String()
	if msg {
		sc.msg = sc.raw.make(s)
		ev.Message = &sc.msg
	}
	if blk {
		sc.block = sc.blk.make(s)
		ev.ContentBlock = &sc.block
	}
	if usage {
		ev.Usage = &sc.usage
	}
	ev.Delta.StopReason = stopReason(sub(s, stop))
}

// delta reads a message_delta's delta: its stop reason into stop, the
// other members streamEvent has checked for their type.
func (r *bodyReader) delta(stop *span) bool {
	return r.object(deltaKeys, func(n int) bool {
		if deltaKeys[n] == "stop_reason" {
			return r.strOrNull(stop)
		}
		var s span
		return r.strOrNull(&s)
	})
}
