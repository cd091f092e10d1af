package openai

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/turnkit/turnkit/internal/jsonscan"
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
	return jsonscan.AppendUnquoted(dst, s.raw, jsonscan.StrEscaped|jsonscan.StrNonASCII)
}

// String returns the string's text.
func (s jstr) String() string {
	if s.plain {
		return string(s.raw)
	}
	var buf [64]byte
	return string(jsonscan.AppendUnquoted(buf[:0], s.raw, jsonscan.StrEscaped|jsonscan.StrNonASCII))
}

// is reports whether the string's text is t, without allocating for a
// text of up to 64 bytes.
func (s jstr) is(t string) bool {
	if s.plain {
		return string(s.raw) == t
	}
	var buf [64]byte
	return string(jsonscan.AppendUnquoted(buf[:0], s.raw, jsonscan.StrEscaped|jsonscan.StrNonASCII)) == t
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
	s := newScanner(data)
	s.SkipWS()
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
	s.SkipWS()
	return ok && s.I == len(s.B)
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

// A scanner reads JSON with jsonscan's primitives, checking it as
// json.Valid does, in the forms the readers above take: each reader
// accepts null as encoding/json does (leaving its target as it is) and
// skips the whitespace after what it read. Its methods return false when
// the JSON is not valid or not what they read (jsonscan's contract), and
// leave the position anywhere then.
type scanner struct{ jsonscan.Scanner }

// newScanner returns a scanner at the start of b.
func newScanner(b []byte) scanner { return scanner{jsonscan.Scanner{B: b}} }

// null reads a null if one is next.
func (s *scanner) null() bool {
	if !s.Null() {
		return false
	}
	s.SkipWS()
	return true
}

// object reads an object, or null, calling member for each member with
// its name; member reads the value, the whitespace before it skipped.
// Names must be plain ASCII without escapes (jsonscan's Members).
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if !s.Members(member) {
		return false
	}
	s.SkipWS()
	return true
}

// list reads an array, or null, calling elem for each element.
func (s *scanner) list(elem func() bool) bool {
	if s.null() {
		return true
	}
	if !s.Elements(elem) {
		return false
	}
	s.SkipWS()
	return true
}

// unknown skips the value of a member the reader does not use, unless
// its name matches one of known without regard to case (names are
// ASCII here, so ASCII folding is encoding/json's).
func (s *scanner) unknown(key []byte, known []string) bool {
	for _, k := range known {
		if jsonscan.FoldEq(key, k) {
			return false
		}
	}
	return s.skip()
}

// skip reads any value (nested up to jsonscan.MaxDepth; deeper goes to
// encoding/json).
func (s *scanner) skip() bool {
	if !s.Value(0) {
		return false
	}
	s.SkipWS()
	return true
}

// str reads a string into dst, or null (leaving dst as it is).
func (s *scanner) str(dst *jstr) bool {
	if s.null() {
		return true
	}
	q, flags, ok := s.Str()
	if !ok {
		return false
	}
	plain := flags&jsonscan.StrEscaped == 0 && (flags&jsonscan.StrNonASCII == 0 || utf8.Valid(q))
	*dst = jstr{raw: q[:len(q):len(q)], plain: plain}
	s.SkipWS()
	return true
}

// integer reads an integer into set, or null (not calling set). A number
// that is not an integer of int64 (int is that wide where the adapter
// runs) is not read: encoding/json fails on it.
func (s *scanner) integer(set func(int64)) bool {
	if s.null() {
		return true
	}
	n, ok := s.Int64(64)
	if !ok {
		return false
	}
	set(n)
	s.SkipWS()
	return true
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
	s := newScanner(data)
	s.SkipWS()
	ok := s.responseBody(r)
	s.SkipWS()
	return ok && s.I == len(s.B)
}

// responseBody reads a response object (or null, leaving r as it is)
// into r, which is zero.
func (s *scanner) responseBody(r *responseBody) bool {
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
				raw, ok := s.raw()
				r.Output = append(r.Output, raw)
				return ok
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
	if !ok {
		return false
	}
	r.ID, r.Model, r.Status = id.String(), model.String(), status.String()
	return true
}

// raw reads any value (null included) and returns it as it stands in
// the data, as encoding/json gives a json.RawMessage.
func (s *scanner) raw() (json.RawMessage, bool) {
	start := s.I
	if !s.Value(0) {
		return nil, false
	}
	raw := json.RawMessage(s.B[start:s.I:s.I])
	s.SkipWS()
	return raw, true
}

// eventKeys are the members of a stream event streamEvent.decode reads.
var eventKeys = []string{"type", "item_id", "output_index", "delta", "item", "response", "code", "message"}

// decode reads a Responses API stream event into ev, as json.Unmarshal
// does (its item and its response's output items kept as they stand in
// data, which they alias), and reports whether it could; it cannot for
// the data chunkView.decode cannot read, which readResponseStream leaves
// to encoding/json. FuzzStreamEvent holds the two to the same result.
func (ev *streamEvent) decode(data []byte) bool {
	*ev = streamEvent{}
	s := newScanner(data)
	s.SkipWS()
	var seen uint8
	var typ, itemID, delta, code, msg jstr
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return once(&seen, 1) && s.str(&typ)
		case "item_id":
			return once(&seen, 2) && s.str(&itemID)
		case "output_index":
			return once(&seen, 4) && s.integer(func(n int64) { ev.OutputIndex = int(n) })
		case "delta":
			return once(&seen, 8) && s.str(&delta)
		case "item":
			if !once(&seen, 16) {
				return false
			}
			raw, ok := s.raw()
			ev.Item = raw
			return ok
		case "response":
			if !once(&seen, 32) {
				return false
			}
			if s.null() {
				return true
			}
			ev.Response = &responseBody{}
			return s.responseBody(ev.Response)
		case "code":
			return once(&seen, 64) && s.str(&code)
		case "message":
			return once(&seen, 128) && s.str(&msg)
		}
		return s.unknown(key, eventKeys)
	})
	s.SkipWS()
	if !ok || s.I != len(s.B) {
		return false
	}
	ev.Type, ev.ItemID, ev.Delta = typ.String(), itemID.String(), delta.String()
	ev.Code, ev.Message = code.String(), msg.String()
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
