package openai

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnkit/turnkit/pipeline"
)

// chatChunk is a stream chunk; Error is set when a server reports a
// failure inside the stream instead of with an HTTP error. The stream's
// reader reads chunks with chunkView, which gives the same.
type chatChunk struct {
	chatBody
	Error *errorBody `json:"error"`
}

// readChatStream reads chat completion chunks until [DONE], emitting
// content and refusal deltas, and assembles the message and tool calls of
// the first choice. A stream is complete when a finish reason or [DONE]
// arrived before it ended.
func readChatStream(res *http.Response, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	var st chatStream
	st.out.Usage.Requests = 1
	for dec.Next() {
		data := dec.Event().Data
		st.events++
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			st.finished = true // the server says the stream is whole
			break
		}
		if err := st.chunk(data, c); err != nil {
			return nil, err
		}
	}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("%w after %d chunks: %w", ErrIncompleteStream, st.events, err)
	}
	if !st.finished {
		return nil, fmt.Errorf("%w after %d chunks", ErrIncompleteStream, st.events)
	}
	return st.response()
}

// chatStream is what a chat stream's chunks have built so far.
type chatStream struct {
	out      pipeline.ModelResponse
	content  strings.Builder
	refusal  strings.Builder
	calls    []streamCall
	finished bool // a finish reason arrived
	events   int  // the chunks read
	view     chunkView
	text     []byte // a delta's text, when it has escapes
}

// chunk reads one chunk's JSON, data, and adds what it brings. The chunk
// is read into st.view, reused from chunk to chunk: a delta's text is
// added to what the stream built without a string of its own, unless
// the call's events reach a consumer (c.Streaming), which gets it as a
// [pipeline.TextDelta].
func (st *chatStream) chunk(data []byte, c *pipeline.ModelCall) error {
	v := &st.view
	if err := v.read(data, true); err != nil {
		return &DecodeError{Where: fmt.Sprintf("stream chunk %d", st.events), Err: err}
	}
	if v.hasError {
		return &FailedError{ResponseID: v.id.String(), Code: v.errCode.String(), Message: v.errMsg.String()}
	}
	if st.out.ID == "" {
		st.out.ID, st.out.Model = v.id.String(), v.model.String()
	}
	if v.hasUsage {
		st.out.Usage = v.usage.usage()
	}
	for i := range v.choices {
		ci := &v.choices[i]
		if ci.index != 0 {
			continue
		}
		d := &ci.delta
		if !d.content.empty() {
			st.add(&st.content, d.content, c)
		}
		if !d.refusal.empty() {
			st.add(&st.refusal, d.refusal, c)
		}
		for j := d.calls[0]; j < d.calls[1]; j++ {
			if err := st.toolCall(&v.calls[j]); err != nil {
				return err
			}
		}
		if !ci.finishReason.empty() {
			st.finished = true
		}
	}
	return nil
}

// add adds a delta's text to b and emits it, if the call's events reach
// a consumer, with the chunk's ID.
func (st *chatStream) add(b *strings.Builder, delta jstr, c *pipeline.ModelCall) {
	text := delta.raw
	if !delta.plain {
		st.text = delta.appendTo(st.text[:0])
		text = st.text
	}
	b.Write(text)
	if c.Streaming() {
		id := st.out.ID
		if !st.view.id.is(id) {
			id = st.view.id.String()
		}
		c.Emit(pipeline.TextDelta{ItemID: id, Delta: string(text)})
	}
}

// toolCall adds a tool call's delta to the call at its index.
func (st *chatStream) toolCall(tc *callView) error {
	if tc.index < 0 || tc.index > 1<<10 {
		return &DecodeError{Where: fmt.Sprintf("stream chunk %d", st.events), Err: fmt.Errorf("tool call index %d out of range", tc.index)}
	}
	for len(st.calls) <= tc.index {
		st.calls = append(st.calls, streamCall{})
	}
	sc := &st.calls[tc.index]
	k := &sc.call
	if !tc.id.empty() && !tc.id.is(k.ID) {
		k.ID = tc.id.String()
	}
	if !tc.typ.empty() && !tc.typ.is(k.Type) {
		k.Type = tc.typ.String()
	}
	if !tc.name.empty() {
		k.Function.Name += tc.name.String()
	}
	if tc.arguments.plain {
		sc.args = append(sc.args, tc.arguments.raw...)
	} else {
		sc.args = tc.arguments.appendTo(sc.args)
	}
	return nil
}

// streamCall is a tool call a stream is building, and its arguments so
// far: bytes, not a strings.Builder, which must not be copied once
// written to, and st.calls moves its calls when a later index grows it
// while an earlier call's arguments are still arriving (parallel calls
// interleaved; FuzzChatStream found it as a panic).
type streamCall struct {
	call chatToolCall
	args []byte
}

// response returns the response the whole stream made.
func (st *chatStream) response() (*pipeline.ModelResponse, error) {
	calls := make([]chatToolCall, len(st.calls))
	for i := range st.calls {
		calls[i] = st.calls[i].call
		calls[i].Function.Arguments = string(st.calls[i].args)
	}
	items, err := chatItems(&chatMessage{Content: st.content.String(), Refusal: st.refusal.String(), ToolCalls: calls})
	if err != nil {
		return nil, err
	}
	out := st.out
	out.Items = items
	return &out, nil
}
