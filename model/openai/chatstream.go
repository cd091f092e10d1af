package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnkit/turnkit/pipeline"
)

// chatChunk is a stream chunk; Error is set when a server reports a
// failure inside the stream instead of with an HTTP error.
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
}

// chunk reads one chunk's JSON, data, and adds what it brings.
func (st *chatStream) chunk(data []byte, c *pipeline.ModelCall) error {
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &DecodeError{Where: fmt.Sprintf("stream chunk %d", st.events), Err: err}
	}
	if ch.Error != nil {
		return &FailedError{ResponseID: ch.ID, Code: ch.Error.Code, Message: ch.Error.Message}
	}
	if st.out.ID == "" {
		st.out.ID, st.out.Model = ch.ID, ch.Model
	}
	if ch.Usage != nil {
		st.out.Usage = ch.Usage.usage()
	}
	for i := range ch.Choices {
		ci := &ch.Choices[i]
		if ci.Index != 0 {
			continue
		}
		d := &ci.Delta
		if d.Content != "" {
			st.content.WriteString(d.Content)
			c.Emit(pipeline.TextDelta{ItemID: ch.ID, Delta: d.Content})
		}
		if d.Refusal != "" {
			st.refusal.WriteString(d.Refusal)
			c.Emit(pipeline.TextDelta{ItemID: ch.ID, Delta: d.Refusal})
		}
		for j := range d.ToolCalls {
			if err := st.toolCall(&d.ToolCalls[j]); err != nil {
				return err
			}
		}
		if ci.FinishReason != "" {
			st.finished = true
		}
	}
	return nil
}

// toolCall adds a tool call's delta to the call at its index.
func (st *chatStream) toolCall(tc *chatToolCall) error {
	if tc.Index < 0 || tc.Index > 1<<10 {
		return &DecodeError{Where: fmt.Sprintf("stream chunk %d", st.events), Err: fmt.Errorf("tool call index %d out of range", tc.Index)}
	}
	for len(st.calls) <= tc.Index {
		st.calls = append(st.calls, streamCall{})
	}
	sc := &st.calls[tc.Index]
	k := &sc.call
	if tc.ID != "" {
		k.ID = tc.ID
	}
	if tc.Type != "" {
		k.Type = tc.Type
	}
	if tc.Function.Name != "" {
		k.Function.Name += tc.Function.Name
	}
	sc.args.WriteString(tc.Function.Arguments)
	return nil
}

// streamCall is a tool call a stream is building, and its arguments so
// far.
type streamCall struct {
	call chatToolCall
	args strings.Builder
}

// response returns the response the whole stream made.
func (st *chatStream) response() (*pipeline.ModelResponse, error) {
	calls := make([]chatToolCall, len(st.calls))
	for i := range st.calls {
		calls[i] = st.calls[i].call
		calls[i].Function.Arguments = st.calls[i].args.String()
	}
	items, err := chatItems(&chatMessage{Content: st.content.String(), Refusal: st.refusal.String(), ToolCalls: calls})
	if err != nil {
		return nil, err
	}
	out := st.out
	out.Items = items
	return &out, nil
}
