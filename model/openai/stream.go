package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/pipeline"
)

// streamEvent is the part of a Responses API stream event the adapter
// reads.
type streamEvent struct {
	Type        string          `json:"type"`
	ItemID      string          `json:"item_id"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *responseBody   `json:"response"`
	Code        string          `json:"code"`
	Message     string          `json:"message"`
}

// openStream sends the request with stream set and returns the response
// whose body carries the events. The caller closes the body.
func openStream(ctx context.Context, send func(...option.RequestOption) error, reqOpts []option.RequestOption) (*http.Response, error) {
	var res *http.Response
	opts := append(slices.Clip(reqOpts), option.WithJSONSet("stream", true), option.WithResponseBodyInto(&res))
	if err := send(opts...); err != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		return res, err
	}
	if res == nil || res.Body == nil {
		return res, fmt.Errorf("%w: no response body", ErrIncompleteStream)
	}
	return res, nil
}

// stream runs a streaming call: text deltas go to c.Emit as they arrive;
// the response is the one the terminal event carries (or, if that one
// lists no output, the items the output_item.done events carried).
func (m *Model) stream(ctx context.Context, c *pipeline.ModelCall, params responses.ResponseNewParams) (*pipeline.ModelResponse, error) {
	res, err := openStream(ctx, func(opts ...option.RequestOption) error {
		_, err := m.client.Responses.New(ctx, params, opts...)
		return err
	}, m.cfg.reqOpts)
	status, reqID := responseMeta(res)
	if err != nil {
		return nil, translate(ctx, apiResponses, err, status, reqID)
	}
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	out, err := readResponseStream(dec, c)
	if err != nil {
		return nil, translate(ctx, apiResponses, err, status, reqID)
	}
	return out, nil
}

// readResponseStream reads events until the terminal one.
func readResponseStream(dec ssestream.Decoder, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	var (
		done   []json.RawMessage // output_item.done items by output index
		events int
	)
	for dec.Next() {
		data := dec.Event().Data
		events++
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		if skippable(data, c.Streaming()) {
			if !jsonscan.Valid(data) {
				return nil, &DecodeError{Where: fmt.Sprintf("stream event %d", events), Err: errors.New("invalid JSON")}
			}
			continue
		}
		var ev streamEvent
		if !ev.decode(data) {
			ev = streamEvent{} // not what decode left
			if err := json.Unmarshal(data, &ev); err != nil {
				return nil, &DecodeError{Where: fmt.Sprintf("stream event %d", events), Err: err}
			}
		}
		if ev.Type == "" {
			ev.Type = dec.Event().Type
		}
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if ev.Delta != "" {
				c.Emit(pipeline.TextDelta{ItemID: ev.ItemID, Delta: ev.Delta})
			}
		case "response.output_item.done":
			if ev.OutputIndex < 0 || ev.OutputIndex > 1<<16 {
				return nil, &DecodeError{Where: fmt.Sprintf("stream event %d", events), Err: fmt.Errorf("output_index %d out of range", ev.OutputIndex)}
			}
			for len(done) <= ev.OutputIndex {
				done = append(done, nil)
			}
			done[ev.OutputIndex] = bytes.Clone(ev.Item) // kept past this event's data
		case "response.completed", "response.incomplete", "response.failed":
			if ev.Response == nil {
				return nil, &DecodeError{Where: fmt.Sprintf("stream event %d (%s)", events, ev.Type), Err: fmt.Errorf("no response")}
			}
			if ev.Type == "response.failed" && ev.Response.Status == "" {
				ev.Response.Status = "failed"
			}
			if len(ev.Response.Output) == 0 && len(done) > 0 {
				ev.Response.Output = slices.DeleteFunc(done, func(r json.RawMessage) bool { return r == nil })
			}
			return ev.Response.modelResponse()
		case "error":
			return nil, &FailedError{Code: ev.Code, Message: ev.Message}
		default:
			if typ, status, ok := hostedStep(ev.Type); ok {
				c.Emit(pipeline.HostedCallProgress{ItemID: ev.ItemID, Type: typ, Status: status})
			}
		}
	}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("%w after %d events: %w", ErrIncompleteStream, events, err)
	}
	return nil, fmt.Errorf("%w after %d events", ErrIncompleteStream, events)
}

// typePrefix is how the API begins every event: its type first.
const typePrefix = `{"type":"`

// readTypes are the events readResponseStream acts on; a text delta
// only when the call's events reach a consumer.
var readTypes = map[string]bool{
	"response.output_item.done": true,
	"response.completed":        true, "response.incomplete": true, "response.failed": true,
	"error": true,
}

// skippable reports whether an event (data, its JSON) is one the stream
// reader does nothing with, known from its type without decoding it: the
// type is the object's first member, written without escapes, as the API
// writes it, and it is neither one of readTypes, nor a text or refusal
// delta when streaming (the call's events reach a consumer), nor a hosted
// call's step. Such an event (most of a stream: the response's creation
// and progress, the items and parts added, the texts and arguments done,
// the arguments' deltas) is checked to be JSON but not decoded; any other
// is decoded whole.
func skippable(data []byte, streaming bool) bool {
	rest, ok := bytes.CutPrefix(data, []byte(typePrefix))
	if !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false // no type (the SSE event's applies), or an escaped one
	}
	typ := rest[:end]
	switch string(typ) {
	case "response.output_text.delta", "response.refusal.delta":
		return !streaming
	}
	if readTypes[string(typ)] {
		return false
	}
	// A hosted call's step (hostedStep), without making a string of typ.
	if call, ok := bytes.CutPrefix(typ, []byte("response.")); ok {
		if i := bytes.LastIndexByte(call, '.'); i >= 0 && hostedTypes[string(call[:i])] {
			return false
		}
	}
	return true
}

// hostedStep splits an event type such as
// "response.web_search_call.searching" into the hosted call's item type
// and the step, for the calls of hostedTypes. Events about a call's
// content (its code or arguments as they stream) are not steps.
func hostedStep(eventType string) (typ, status string, ok bool) {
	rest, ok := strings.CutPrefix(eventType, "response.")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || !hostedTypes[rest[:i]] {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}
