package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// A chunkView is a chat completion or stream chunk as read by
// chunkView.decode: the members the adapter uses, with their strings left
// where they are in the body (see jstr). It is the chatChunk (or, without
// the error member, the chatBody) that encoding/json decodes from the same
// JSON, without its allocations: a stream's reader keeps one view and
// reads every chunk into it, reusing its lists. FuzzChatChunk holds the
// two decoders to the same result.
type chunkView struct {
	id, model jstr
	choices   []choiceView
	calls     []callView // the tool calls of every choice's message and delta
	usage     chatUsage
	hasUsage  bool // a usage object, even an empty one
	errCode   jstr
	errMsg    jstr
	hasError  bool // an error object, even an empty one (read only withError)
}

type choiceView struct {
	index          int
	message, delta msgView
	finishReason   jstr
}

type msgView struct {
	content, refusal jstr
	calls            [2]int // its tool calls: chunkView.calls[calls[0]:calls[1]]
}

type callView struct {
	index                    int
	id, typ, name, arguments jstr
}

// A jstr is a JSON string as a body has it between its quotes, checked
// but with its escapes not resolved. plain says that those bytes are its
// text: no escape in them, and only valid UTF-8.
type jstr struct {
	raw   []byte
	plain bool
}

// appendTo appends the string's text to dst, as encoding/json decodes it.
func (s jstr) appendTo(dst []byte) []byte {
	if s.plain {
		return append(dst, s.raw...)
	}
	return appendUnquoted(dst, s.raw)
}

// String returns the string's text.
func (s jstr) String() string {
	if s.plain {
		return string(s.raw)
	}
	var buf [64]byte
	return string(appendUnquoted(buf[:0], s.raw))
}

// is reports whether the string's text is t, without allocating for a
// text of up to 64 bytes.
func (s jstr) is(t string) bool {
	if s.plain {
		return string(s.raw) == t
	}
	var buf [64]byte
	return string(appendUnquoted(buf[:0], s.raw)) == t
}

// empty reports whether the text is empty: a JSON string's text is empty
// exactly when nothing stands between its quotes.
func (s jstr) empty() bool { return len(s.raw) == 0 }

// Known members of each object the view reads. A member whose name
// matches one of them only without regard to case is one encoding/json
// would decode (it matches names so); the view leaves such a body to it.
var (
	bodyKeys    = []string{"id", "model", "choices", "usage", "error"}
	choiceKeys  = []string{"index", "message", "delta", "finish_reason"}
	messageKeys = []string{"content", "refusal", "tool_calls"}
	callKeys    = []string{"index", "id", "type", "function"}
	funcKeys    = []string{"name", "arguments"}
	usageKeys   = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
	cachedKeys  = []string{"cached_tokens"}
	reasonKeys  = []string{"reasoning_tokens"}
	errorKeys   = []string{"code", "message"}
)

// decode reads data into v, as json.Unmarshal reads it into a chatChunk
// (withError) or a chatBody, and reports whether it could. It cannot
// when data is not JSON, when encoding/json would fail on it (a member of
// the wrong type, a number with a fraction where an integer goes), and
// when encoding/json's result needs more than this reader does: a member
// named with an escape, a byte outside ASCII or another case than the
// struct's tag, or given twice. decodeSlow reads such data.
func (v *chunkView) decode(data []byte, withError bool) bool {
	*v = chunkView{choices: v.choices[:0], calls: v.calls[:0]}
	s := scanner{b: data}
	s.ws()
	var seen uint8
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return once(&seen, 1) && s.str(&v.id)
		case "model":
			return once(&seen, 2) && s.str(&v.model)
		case "choices":
			return once(&seen, 4) && s.list(func() bool {
				v.choices = append(v.choices, choiceView{})
				return s.choice(v, len(v.choices)-1)
			})
		case "usage":
			if !once(&seen, 8) {
				return false
			}
			if s.null() {
				return true
			}
			v.hasUsage = true
			return s.usage(&v.usage)
		case "error":
			if !withError {
				return s.skip() // a chatBody has no error member
			}
			if !once(&seen, 16) {
				return false
			}
			if s.null() {
				return true
			}
			v.hasError = true
			var seenErr uint8
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "code":
					return once(&seenErr, 1) && s.str(&v.errCode)
				case "message":
					return once(&seenErr, 2) && s.str(&v.errMsg)
				}
				return s.unknown(key, errorKeys)
			})
		}
		return s.unknown(key, bodyKeys)
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// choice reads the object of v.choices[i], or null.
func (s *scanner) choice(v *chunkView, i int) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		ch := &v.choices[i] // read again: the lists grow
		switch string(key) {
		case "index":
			return once(&seen, 1) && s.integer(func(n int64) { ch.index = int(n) })
		case "message":
			return once(&seen, 2) && s.message(v, &ch.message)
		case "delta":
			return once(&seen, 4) && s.message(v, &ch.delta)
		case "finish_reason":
			return once(&seen, 8) && s.str(&ch.finishReason)
		}
		return s.unknown(key, choiceKeys)
	})
}

// message reads a message or a delta (an object or null) into m; its
// tool calls go to the end of v.calls.
func (s *scanner) message(v *chunkView, m *msgView) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return once(&seen, 1) && s.str(&m.content)
		case "refusal":
			return once(&seen, 2) && s.str(&m.refusal)
		case "tool_calls":
			if !once(&seen, 4) {
				return false
			}
			start := len(v.calls)
			if !s.list(func() bool {
				v.calls = append(v.calls, callView{})
				return s.call(v, len(v.calls)-1)
			}) {
				return false
			}
			m.calls = [2]int{start, len(v.calls)}
			return true
		}
		return s.unknown(key, messageKeys)
	})
}

// call reads the object of v.calls[i], or null.
func (s *scanner) call(v *chunkView, i int) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		tc := &v.calls[i]
		switch string(key) {
		case "index":
			return once(&seen, 1) && s.integer(func(n int64) { tc.index = int(n) })
		case "id":
			return once(&seen, 2) && s.str(&tc.id)
		case "type":
			return once(&seen, 4) && s.str(&tc.typ)
		case "function":
			if !once(&seen, 8) {
				return false
			}
			var seenFn uint8
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "name":
					return once(&seenFn, 1) && s.str(&tc.name)
				case "arguments":
					return once(&seenFn, 2) && s.str(&tc.arguments)
				}
				return s.unknown(key, funcKeys)
			})
		}
		return s.unknown(key, callKeys)
	})
}

// usage reads a usage object, its opening brace next.
func (s *scanner) usage(u *chatUsage) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return once(&seen, 1) && s.integer(func(n int64) { u.PromptTokens = n })
		case "completion_tokens":
			return once(&seen, 2) && s.integer(func(n int64) { u.CompletionTokens = n })
		case "prompt_tokens_details":
			var seenIn uint8
			return once(&seen, 4) && s.object(func(key []byte) bool {
				if string(key) == "cached_tokens" {
					return once(&seenIn, 1) && s.integer(func(n int64) { u.PromptTokensDetails.CachedTokens = n })
				}
				return s.unknown(key, cachedKeys)
			})
		case "completion_tokens_details":
			var seenOut uint8
			return once(&seen, 8) && s.object(func(key []byte) bool {
				if string(key) == "reasoning_tokens" {
					return once(&seenOut, 1) && s.integer(func(n int64) { u.CompletionTokensDetails.ReasoningTokens = n })
				}
				return s.unknown(key, reasonKeys)
			})
		}
		return s.unknown(key, usageKeys)
	})
}

// once marks bit in seen and reports whether it was not marked: a member
// given twice is left to encoding/json, which merges the two values.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// decodeSlow reads data into v with encoding/json, for the data decode
// does not read: it returns encoding/json's error, or else reads into v
// the chatChunk (withError) or chatBody that encoding/json decoded,
// written back as JSON, which decode reads.
func (v *chunkView) decodeSlow(data []byte, withError bool) error {
	var (
		canon []byte
		err   error
	)
	if withError {
		var ch chatChunk
		if err = json.Unmarshal(data, &ch); err != nil {
			return err
		}
		canon, err = json.Marshal(&ch)
	} else {
		var body chatBody
		if err = json.Unmarshal(data, &body); err != nil {
			return err
		}
		canon, err = json.Marshal(&body)
	}
	if err != nil {
		return err
	}
	if !v.decode(canon, withError) {
		return errors.New("the body as encoding/json read it could not be read again") // a bug of decode
	}
	return nil
}

// read reads data into v with decode, or else with decodeSlow.
func (v *chunkView) read(data []byte, withError bool) error {
	if v.decode(data, withError) {
		return nil
	}
	return v.decodeSlow(data, withError)
}

// messageOf returns m as the chatMessage encoding/json decodes.
func (v *chunkView) messageOf(m *msgView) chatMessage {
	out := chatMessage{Content: m.content.String(), Refusal: m.refusal.String()}
	if calls := v.calls[m.calls[0]:m.calls[1]]; len(calls) > 0 {
		out.ToolCalls = make([]chatToolCall, len(calls))
		for i, c := range calls {
			tc := &out.ToolCalls[i]
			tc.Index, tc.ID, tc.Type = c.index, c.id.String(), c.typ.String()
			tc.Function.Name, tc.Function.Arguments = c.name.String(), c.arguments.String()
		}
	}
	return out
}

// A scanner reads JSON from b[i:], checking it as json.Valid does. Its
// methods return false when the JSON is not valid or not what they read,
// and leave i anywhere then.
type scanner struct {
	b      []byte
	i      int
	depth  int
	spaced bool // whitespace was skipped
}

// maxDepth is the deepest nesting encoding/json reads.
const maxDepth = 10000

// ws skips whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			s.spaced = true
		default:
			return
		}
	}
}

// null reads a null if one is next.
func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		s.ws()
		return true
	}
	return false
}

// object reads an object, or null, calling member for each member with
// its name; member reads the value, the whitespace before it skipped.
// Names must be plain ASCII without escapes.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		s.ws()
		return true
	}
	for {
		var key jstr
		if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str(&key) || !key.plain || !ascii(key.raw) || s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !member(key.raw) {
			return false
		}
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			s.depth--
			s.ws()
			return true
		default:
			return false
		}
	}
}

// list reads an array, or null, calling elem for each element.
func (s *scanner) list(elem func() bool) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		s.ws()
		return true
	}
	for {
		if !elem() || s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			s.depth--
			s.ws()
			return true
		default:
			return false
		}
	}
}

// unknown skips the value of a member the reader does not use, unless
// its name matches one of known without regard to case.
func (s *scanner) unknown(key []byte, known []string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return s.skip()
}

// skip reads any value.
func (s *scanner) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		return s.list(s.skip)
	case c == '"':
		var str jstr
		return s.str(&str)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.null()
	case c == '-' || c >= '0' && c <= '9':
		_, _, ok := s.number()
		return ok
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	s.ws()
	return true
}

// str reads a string into dst, or null (leaving dst as it is).
func (s *scanner) str(dst *jstr) bool {
	if s.null() {
		return true
	}
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return false
	}
	start := s.i + 1
	plain, high := true, false
	for i := start; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			*dst = jstr{raw: b[start:i:i], plain: plain && (!high || utf8.Valid(b[start:i]))}
			s.i = i + 1
			s.ws()
			return true
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b[i+2:]) < 0 {
					return false
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			high = high || c >= utf8.RuneSelf
			i++
		}
	}
	return false
}

// number reads a number, returning it when it is an integer that fits
// in an int64 (int is that wide where the adapter runs).
func (s *scanner) number() (n int64, isInt, ok bool) {
	b := s.b
	i := s.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	var u uint64 // the magnitude
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	isInt = true
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			d := uint64(b[i] - '0')
			if u > (limit-d)/10 {
				isInt = false // past int64: ParseInt fails, and so does encoding/json
			}
			u = u*10 + d
		}
	default:
		return 0, false, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false, false
		}
		i, isInt = j, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false, false
		}
		i, isInt = j, false
	}
	s.i = i
	s.ws()
	n = int64(u)
	if neg {
		n = -n // -(1<<63) is itself
	}
	return n, isInt, true
}

// integer reads an integer into set, or null (not calling set). A number
// that is not an integer of int64 is not read: encoding/json fails on it.
func (s *scanner) integer(set func(int64)) bool {
	if s.null() {
		return true
	}
	n, isInt, ok := s.number()
	if !ok || !isInt {
		return false
	}
	set(n)
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// hex4 returns the value of b's first four bytes as hex digits, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendUnquoted appends the text of a checked JSON string's contents
// (raw, between its quotes) to dst as encoding/json decodes it: escapes
// resolved, a surrogate pair joined, a lone surrogate and each byte of
// invalid UTF-8 replaced by U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	start := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '\\' {
			i++
			continue
		}
		dst = append(dst, raw[start:i]...)
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
			start = i
			continue
		}
		// An escape (the string was checked: no control character).
		switch e := raw[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = hex4(raw[i+2:])
				}
				if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
					r = pair
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			start = i
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
		start = i
	}
	return append(dst, raw[start:]...)
}

// Known members of a Responses API response object and its parts.
var (
	responseKeys  = []string{"id", "model", "status", "error", "output", "usage"}
	respUsageKeys = []string{"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details"}
)

// decode reads a Responses API response object into r, as json.Unmarshal
// does (its output items kept as they stand in data, which they alias),
// and reports whether it could; it cannot for the data chunkView.decode
// cannot read. parseResponse leaves such data to encoding/json.
// FuzzResponseBody holds the two to the same result.
func (r *responseBody) decode(data []byte) bool {
	*r = responseBody{}
	s := scanner{b: data}
	s.ws()
	var seen uint8
	var id, model, status jstr
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return once(&seen, 1) && s.str(&id)
		case "model":
			return once(&seen, 2) && s.str(&model)
		case "status":
			return once(&seen, 4) && s.str(&status)
		case "error":
			if !once(&seen, 8) {
				return false
			}
			if s.null() {
				return true
			}
			r.Error = &errorBody{}
			var code, msg jstr
			var seenErr uint8
			if !s.object(func(key []byte) bool {
				switch string(key) {
				case "code":
					return once(&seenErr, 1) && s.str(&code)
				case "message":
					return once(&seenErr, 2) && s.str(&msg)
				}
				return s.unknown(key, errorKeys)
			}) {
				return false
			}
			r.Error.Code, r.Error.Message = code.String(), msg.String()
			return true
		case "output":
			if !once(&seen, 16) {
				return false
			}
			if s.null() {
				return true
			}
			r.Output = []json.RawMessage{} // an empty list is not nil
			return s.list(func() bool {
				start := s.i
				if !s.skip() {
					return false
				}
				r.Output = append(r.Output, json.RawMessage(bytes.TrimRight(s.b[start:s.i], " \t\r\n")))
				return true
			})
		case "usage":
			if !once(&seen, 32) {
				return false
			}
			if s.null() {
				return true
			}
			r.Usage = &responseUsage{}
			return s.responseUsage(r.Usage)
		}
		return s.unknown(key, responseKeys)
	})
	s.ws()
	if !ok || s.i != len(s.b) {
		return false
	}
	r.ID, r.Model, r.Status = id.String(), model.String(), status.String()
	return true
}

// responseUsage reads a Responses API usage object.
func (s *scanner) responseUsage(u *responseUsage) bool {
	var seen uint8
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "input_tokens":
			return once(&seen, 1) && s.integer(func(n int64) { u.InputTokens = n })
		case "output_tokens":
			return once(&seen, 2) && s.integer(func(n int64) { u.OutputTokens = n })
		case "input_tokens_details":
			var seenIn uint8
			return once(&seen, 4) && s.object(func(key []byte) bool {
				if string(key) == "cached_tokens" {
					return once(&seenIn, 1) && s.integer(func(n int64) { u.InputTokensDetails.CachedTokens = n })
				}
				return s.unknown(key, cachedKeys)
			})
		case "output_tokens_details":
			var seenOut uint8
			return once(&seen, 8) && s.object(func(key []byte) bool {
				if string(key) == "reasoning_tokens" {
					return once(&seenOut, 1) && s.integer(func(n int64) { u.OutputTokensDetails.ReasoningTokens = n })
				}
				return s.unknown(key, reasonKeys)
			})
		}
		return s.unknown(key, respUsageKeys)
	})
}
