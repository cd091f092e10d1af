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
	var (
		out      pipeline.ModelResponse
		content  strings.Builder
		refusal  strings.Builder
		calls    []chatToolCall
		args     []strings.Builder
		finished bool
		events   int
	)
	out.Usage.Requests = 1
	for dec.Next() {
		data := dec.Event().Data
		events++
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			finished = true // the server says the stream is whole
			break
		}
		var ch chatChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return nil, &DecodeError{Where: fmt.Sprintf("stream chunk %d", events), Err: err}
		}
		if ch.Error != nil {
			return nil, &FailedError{ResponseID: ch.ID, Code: ch.Error.Code, Message: ch.Error.Message}
		}
		if out.ID == "" {
			out.ID, out.Model = ch.ID, ch.Model
		}
		if ch.Usage != nil {
			out.Usage = ch.Usage.usage()
		}
		for i := range ch.Choices {
			ci := &ch.Choices[i]
			if ci.Index != 0 {
				continue
			}
			d := &ci.Delta
			if d.Content != "" {
				content.WriteString(d.Content)
				c.Emit(pipeline.TextDelta{ItemID: ch.ID, Delta: d.Content})
			}
			if d.Refusal != "" {
				refusal.WriteString(d.Refusal)
				c.Emit(pipeline.TextDelta{ItemID: ch.ID, Delta: d.Refusal})
			}
			for _, tc := range d.ToolCalls {
				if tc.Index < 0 || tc.Index > 1<<10 {
					return nil, &DecodeError{Where: fmt.Sprintf("stream chunk %d", events), Err: fmt.Errorf("tool call index %d out of range", tc.Index)}
				}
				for len(calls) <= tc.Index {
					calls = append(calls, chatToolCall{})
					args = append(args, strings.Builder{})
				}
				k := &calls[tc.Index]
				if tc.ID != "" {
					k.ID = tc.ID
				}
				if tc.Type != "" {
					k.Type = tc.Type
				}
				if tc.Function.Name != "" {
					k.Function.Name += tc.Function.Name
				}
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
			if ci.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("%w after %d chunks: %w", ErrIncompleteStream, events, err)
	}
	if !finished {
		return nil, fmt.Errorf("%w after %d chunks", ErrIncompleteStream, events)
	}
	for i := range calls {
		calls[i].Function.Arguments = args[i].String()
	}
	items, err := chatItems(&chatMessage{Content: content.String(), Refusal: refusal.String(), ToolCalls: calls})
	if err != nil {
		return nil, err
	}
	out.Items = items
	return &out, nil
}
