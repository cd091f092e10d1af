package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/pipeline"
)

// streamEvent is the part of a Messages API stream event the adapter
// reads.
type streamEvent struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	Message      *messageBody `json:"message"`
	ContentBlock *block       `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usageBody `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// stream runs a streaming call through the client, its body asking for
// a stream, and reads the events itself: text deltas go to c.Emit as they
// arrive; the blocks are built from their start and delta events, and the
// response is complete at message_stop.
func (m *Model) stream(ctx context.Context, c *pipeline.ModelCall, req request) (*pipeline.ModelResponse, error) {
	var res *http.Response
	err := m.post(ctx, req, &res)
	status, reqID := responseMeta(res)
	if err != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		return nil, translate(ctx, err, status, reqID)
	}
	if res == nil || res.Body == nil {
		return nil, translate(ctx, fmt.Errorf("%w: no response body", ErrIncompleteStream), status, reqID)
	}
	dec := newEvents(res)
	defer dec.Close()
	out, err := readStream(dec, c, req.outputTool)
	if err != nil {
		return nil, translate(ctx, err, status, reqID)
	}
	return out, nil
}

// readStream reads events until message_stop. The input JSON deltas of a
// tool_use of outputTool are emitted as text deltas: that block is the
// structured output's message.
func readStream(dec ssestream.Decoder, c *pipeline.ModelCall, outputTool string) (*pipeline.ModelResponse, error) {
	r := streamReader{c: c, outputTool: outputTool, emit: c.Streaming()}
	r.blocks, r.partial = r.blockRoom[:0], r.partialRoom[:0]
	for dec.Next() {
		r.events++
		data := dec.Event().Data
		// The events of a block's content, most of a stream, are read
		// without decoding the whole event; the others are decoded.
		if i, isJSON, str, ok := fastDelta(data); ok {
			if read, err := r.delta(i, isJSON, str); read || err != nil {
				if err != nil {
					return nil, err
				}
				continue
			}
		}
		if out, err := r.event(data, dec.Event().Type); out != nil || err != nil {
			return out, err
		}
	}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("%w after %d events: %w", ErrIncompleteStream, r.events, err)
	}
	return nil, fmt.Errorf("%w after %d events", ErrIncompleteStream, r.events)
}

// A streamReader is what a stream has built so far: the message, its
// blocks and the input JSON each has received, the usage.
//
// The text of every delta is written once, in texts, an arena that only
// grows: a block's text is a span of it (its deltas follow each other
// there), and a TextDelta's text is the span its delta took, without a
// string of its own. A string taken from a strings.Builder stays as it
// was while the builder grows (the builder writes past it, or copies it
// to a larger array), so the spans handed out never change.
type streamReader struct {
	c          *pipeline.ModelCall
	outputTool string
	emit       bool // the call's events reach a consumer (c.Streaming)
	msg        messageBody
	started    bool
	blocks     []block
	partial    [][]byte // input_json_delta text per block
	// Room for the blocks of most responses (a text and a tool_use, a
	// thinking block and a text) in the reader's own allocation, rather
	// than two allocations each for blocks and partial as they grow.
	blockRoom   [2]block
	partialRoom [2][]byte
	texts       strings.Builder
	usage       usageBody
	events      int
	ev          streamEvent  // the event being decoded, reused
	scratch     eventScratch // what readEvent reads, reused
}

// where names the stream's current event, of type typ, in an error.
func (r *streamReader) where(typ string) string {
	return fmt.Sprintf("stream event %d (%s)", r.events, typ)
}

// delta adds a content_block_delta read by fastDelta, whose text is the
// JSON string str: text, or input JSON when isJSON, to block i, and emits
// what is text when the call's events reach a consumer. read false means
// str is not a string writeString reads, and the event is left to the
// general read.
func (r *streamReader) delta(i int, isJSON bool, str []byte) (read bool, err error) {
	if i >= len(r.blocks) {
		if !validString(str) {
			return false, nil
		}
		return true, &DecodeError{Where: r.where("content_block_delta"), Err: fmt.Errorf("index %d of %d blocks", i, len(r.blocks))}
	}
	if isJSON {
		start := r.texts.Len()
		if !writeString(r.arena(), str) {
			return false, nil
		}
		text := r.texts.String()[start:]
		r.partial[i] = append(r.partial[i], text...)
		if r.blocks[i].output && text != "" && r.emit {
			r.c.Emit(pipeline.TextDelta{ItemID: r.msg.ID, Delta: text})
		}
		return true, nil
	}
	b := &r.blocks[i]
	start := r.textStart(b)
	if !writeString(&r.texts, str) {
		return false, nil
	}
	r.textEnd(b, start)
	return true, nil
}

// arena returns the arena of the stream's texts, with room for a few
// deltas from the first.
func (r *streamReader) arena() *strings.Builder {
	if r.texts.Cap() == 0 {
		r.texts.Grow(256)
	}
	return &r.texts
}

// textStart readies the arena for text of block b: b's text so far must
// end where the next delta goes, so a block whose text another's
// interrupted has its text written again at the arena's end. It returns
// where the delta starts.
func (r *streamReader) textStart(b *block) int {
	a := r.arena()
	if n := a.Len(); b.textEnd != n {
		if b.textEnd > b.textAt {
			a.WriteString(a.String()[b.textAt:b.textEnd])
		}
		b.textAt, b.textEnd = n, n
	}
	return a.Len()
}

// textEnd ends a text delta of block b written from start on, and emits
// it when the call's events reach a consumer.
func (r *streamReader) textEnd(b *block, start int) {
	b.textEnd = r.texts.Len()
	if text := r.texts.String()[start:]; text != "" && r.emit {
		r.c.Emit(pipeline.TextDelta{ItemID: r.msg.ID, Delta: text})
	}
}

// event adds an event fastDelta did not read, of SSE type typ, and
// returns the response once the stream is complete.
func (r *streamReader) event(data []byte, typ string) (*pipeline.ModelResponse, error) {
	switch eventType(data) {
	case "content_block_delta":
		if err := r.blockDelta(data); err != nil {
			return nil, &DecodeError{Where: r.where("content_block_delta"), Err: err}
		}
		return nil, nil
	case "content_block_stop":
		return nil, r.blockStop(data)
	case "ping":
		return nil, nil
	case "message_stop":
		if !jsonscan.Valid(data) {
			return nil, &DecodeError{Where: r.where("message_stop"), Err: fmt.Errorf("not a JSON value")}
		}
		return finish(&r.msg, r.started, r.blocks, r.texts.String(), &r.usage, r.events, r.outputTool)
	}
	ev := &r.ev
	*ev = streamEvent{}
	if !readEvent(data, ev, &r.scratch) {
		*ev = streamEvent{}
		if err := json.Unmarshal(data, ev); err != nil {
			return nil, &DecodeError{Where: fmt.Sprintf("stream event %d", r.events), Err: err}
		}
	}
	if ev.Type == "" {
		ev.Type = typ
	}
	return r.decoded(ev, data)
}

// blockStop ends a block: the input JSON it received becomes its input.
func (r *streamReader) blockStop(data []byte) error {
	i, ok := stopIndex(data)
	if !ok {
		idx := gjson.GetBytes(data, "index")
		if i = int(idx.Int()); idx.Type != gjson.Number {
			i = -1
		}
	}
	if i < 0 || i >= len(r.blocks) {
		return &DecodeError{Where: r.where("content_block_stop"), Err: fmt.Errorf("index %d of %d blocks", i, len(r.blocks))}
	}
	if p := r.partial[i]; len(p) > 0 {
		if b := &r.blocks[i]; b.raw != nil {
			b.raw = withInput(b.raw, p)
		} else {
			b.Input, b.args = p, "" // the streamed input, not the start's
		}
	}
	return nil
}

// decoded adds an event decoded whole, ev (its JSON data), and returns
// the response once the stream is complete.
func (r *streamReader) decoded(ev *streamEvent, data []byte) (*pipeline.ModelResponse, error) {
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return nil, &DecodeError{Where: r.where("message_start"), Err: fmt.Errorf("no message")}
		}
		r.msg, r.started = *ev.Message, true
		r.usage = r.msg.Usage
	case "content_block_start":
		if ev.Index != len(r.blocks) || ev.Index > 1<<16 {
			return nil, &DecodeError{Where: r.where("content_block_start"), Err: fmt.Errorf("index %d, want %d", ev.Index, len(r.blocks))}
		}
		b, err := startedBlock(ev.ContentBlock, data)
		if err != nil {
			return nil, &DecodeError{Where: r.where("content_block_start"), Err: err}
		}
		b.output = r.outputTool != "" && b.Type == "tool_use" && b.Name == r.outputTool
		r.blocks = append(r.blocks, b)
		r.partial = append(r.partial, nil)
		if b.Text != "" && r.emit {
			r.c.Emit(pipeline.TextDelta{ItemID: r.msg.ID, Delta: b.Text})
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			r.msg.StopReason = ev.Delta.StopReason
		}
		if u := ev.Usage; u != nil {
			r.usage.merge(u)
		}
	case "message_stop":
		return finish(&r.msg, r.started, r.blocks, r.texts.String(), &r.usage, r.events, r.outputTool)
	case "error":
		se := &StreamError{Type: "error"}
		if ev.Error != nil {
			se.Type, se.Message = ev.Error.Type, ev.Error.Message
		}
		return nil, se
	}
	return nil, nil
}

// finish returns the response a stream built, at its message_stop; texts
// is the arena of its text deltas.
func finish(msg *messageBody, started bool, blocks []block, texts string, usage *usageBody, events int, outputTool string) (*pipeline.ModelResponse, error) {
	if !started {
		return nil, &DecodeError{Where: fmt.Sprintf("stream event %d (message_stop)", events), Err: fmt.Errorf("no message_start")}
	}
	for i := range blocks {
		if b := &blocks[i]; b.textEnd > b.textAt {
			b.Text += texts[b.textAt:b.textEnd]
		}
	}
	items, err := responseItems(msg.ID, blocks, msg.StopReason, outputTool)
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: msg.ID, Model: msg.Model, Items: items, Usage: usage.usage()}, nil
}

// startedBlock returns the block a content_block_start event decoded, b,
// with its JSON when it is of a type kept opaque (the event read again
// for it).
func startedBlock(b *block, data []byte) (block, error) {
	if b == nil {
		return block{}, fmt.Errorf("no content_block")
	}
	if b.known() {
		return *b, nil
	}
	var ev struct {
		ContentBlock json.RawMessage `json:"content_block"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return block{}, err
	}
	out := *b
	out.raw = ev.ContentBlock
	return out, nil
}

// blockDelta applies a content_block_delta event to its block: text
// (emitted as a TextDelta), a tool's input JSON, thinking, a signature.
// Deltas of other types (citations) are ignored.
func (r *streamReader) blockDelta(data []byte) error {
	idx := gjson.GetBytes(data, "index")
	i := int(idx.Int())
	if idx.Type != gjson.Number || i < 0 || i >= len(r.blocks) {
		return fmt.Errorf("index %s of %d blocks", idx.Raw, len(r.blocks))
	}
	d := gjson.GetBytes(data, "delta")
	if !d.IsObject() {
		return fmt.Errorf("no delta object")
	}
	b := &r.blocks[i]
	// Strings are copied (String on a copy of the raw text, or written
	// in the arena): gjson's results point into data, which the decoder
	// may reuse.
	switch d.Get("type").Str {
	case "text_delta":
		start := r.textStart(b)
		r.texts.WriteString(d.Get("text").String())
		r.textEnd(b, start)
	case "input_json_delta":
		text := d.Get("partial_json").String()
		r.partial[i] = append(r.partial[i], text...)
		if b.output && text != "" && r.emit {
			r.c.Emit(pipeline.TextDelta{ItemID: r.msg.ID, Delta: strings.Clone(text)})
		}
	case "thinking_delta":
		b.Thinking += strings.Clone(d.Get("thinking").String())
	case "signature_delta":
		b.Signature += strings.Clone(d.Get("signature").String())
	}
	return nil
}

// The text and input JSON delta events as the API writes them, their
// members in this order.
var (
	textDeltaHead = []byte(`{"type":"content_block_delta","index":`)
	textDeltaMid  = []byte(`,"delta":{"type":"text_delta","text":`)
	jsonDeltaMid  = []byte(`,"delta":{"type":"input_json_delta","partial_json":`)
)

// fastDelta reads a text or input JSON delta event written in the API's
// own member order and spacing (see deltaOf); isJSON reports an input
// JSON delta, whose text is the partial JSON. str is the delta's JSON
// string, quotes included, in data; writeString reads its text.
func fastDelta(data []byte) (index int, isJSON bool, str []byte, ok bool) {
	if index, str, ok = deltaOf(data, textDeltaMid); ok {
		return index, false, str, true
	}
	index, str, ok = deltaOf(data, jsonDeltaMid)
	return index, true, str, ok
}

// deltaOf reads a delta event whose members up to the delta's string are
// textDeltaHead, the index and mid, written in the API's own member
// order and spacing, such as {"type":"content_block_delta","index":N,
// "delta":{"type":"text_delta","text":"…"}}, and returns the string,
// quotes included. Any other shape (another member order, spaces, extra
// members) returns ok false, and the event is read the general way.
func deltaOf(data, mid []byte) (index int, str []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, textDeltaHead)
	if !ok {
		return 0, nil, false
	}
	n := 0
	for n < len(rest) && n < 6 && rest[n] >= '0' && rest[n] <= '9' {
		index = index*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 {
		return 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], mid); !ok {
		return 0, nil, false
	}
	str, ok = bytes.CutSuffix(bytes.TrimRight(rest, " \t\r\n"), []byte("}}"))
	if !ok || len(str) < 2 || str[0] != '"' || str[len(str)-1] != '"' {
		return 0, nil, false
	}
	return index, str, true
}

// writeString writes the text of str, a JSON string found by deltaOf,
// to sb. A string that is not one JSON string encoding/json reads (a
// quote inside, a bad escape) returns false, nothing written.
func writeString(sb *strings.Builder, str []byte) bool {
	inner := str[1 : len(str)-1]
	switch {
	case bytes.IndexByte(inner, '\\') < 0:
		if bytes.IndexByte(inner, '"') >= 0 {
			return false // more than one value
		}
		sb.Write(inner)
	case plainString(str):
		unescape(sb, inner)
	default:
		text, ok := unquoted(str)
		if !ok {
			return false
		}
		sb.WriteString(text)
	}
	return true
}

// validString reports a str writeString reads, without writing it.
func validString(str []byte) bool {
	inner := str[1 : len(str)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return bytes.IndexByte(inner, '"') < 0
	}
	if plainString(str) {
		return true
	}
	_, ok := unquoted(str)
	return ok
}

// unquoted returns the text of the JSON string str as encoding/json reads
// it, for a string with escapes unescape does not read (see plainString).
func unquoted(str []byte) (string, bool) {
	var text string
	if json.Unmarshal(str, &text) != nil {
		return "", false
	}
	return text, true
}

// plainString reports a JSON string, quotes included, whose escapes
// unescape reads as encoding/json does (no lone surrogate, no invalid
// UTF-8, no control character): one allocation for its text, where
// json.Unmarshal takes several.
func plainString(str []byte) bool {
	if bytes.IndexFunc(str, func(r rune) bool { return r < ' ' }) >= 0 {
		return false
	}
	r := bodyReader{b: str}
	var s span
	return r.str(&s) && r.i == len(str)
}

// eventTypes are the event types the stream reader tells apart, so that
// eventType returns them without a copy.
var eventTypes = []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping", "error"}

// eventType returns the type member of an event. Written first, as the
// API writes it, and one of eventTypes, it is read without a copy; any
// other event is read with gjson.
func eventType(data []byte) string {
	if rest, ok := bytes.CutPrefix(data, typeHead); ok {
		if n := bytes.IndexByte(rest, '"'); n > 0 {
			for _, t := range eventTypes {
				if string(rest[:n]) == t {
					return t
				}
			}
		}
	}
	return gjson.GetBytes(data, "type").Str
}

// stopIndex reads the index of a content_block_stop event written as the
// API writes it, {"type":"content_block_stop","index":N}; any other
// shape returns ok false.
func stopIndex(data []byte) (index int, ok bool) {
	rest, ok := bytes.CutPrefix(data, stopHead)
	if !ok {
		return 0, false
	}
	n := 0
	for n < len(rest) && n < 6 && rest[n] >= '0' && rest[n] <= '9' {
		index = index*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 || string(bytes.TrimRight(rest[n:], " \t\r\n")) != "}" {
		return 0, false
	}
	return index, true
}

var (
	typeHead = []byte(`{"type":"`)
	stopHead = []byte(`{"type":"content_block_stop","index":`)
)

// merge takes the counts a message_delta reports: cumulative, so each
// one given replaces the message_start's.
func (u *usageBody) merge(d *usageBody) {
	if d.InputTokens > 0 {
		u.InputTokens = d.InputTokens
	}
	if d.OutputTokens > 0 {
		u.OutputTokens = d.OutputTokens
	}
	if d.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
	if d.OutputTokensDetails.ThinkingTokens > 0 {
		u.OutputTokensDetails.ThinkingTokens = d.OutputTokensDetails.ThinkingTokens
	}
}

// withInput returns an opaque block's JSON with its input member set to
// the streamed input.
func withInput(raw json.RawMessage, input []byte) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil || !jsonscan.Valid(input) {
		return raw
	}
	v["input"] = input
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
