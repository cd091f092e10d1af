package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

const apiCompact = "responses.compact"

// Compact compacts head, the older part of a model call's input, with the
// Responses API's own compaction (POST /responses/compact): the API
// returns the items that stand for it, the user messages followed by one
// compaction item whose encrypted content carries the rest. The
// compaction item is an opaque item (named "compaction") that the model
// reads back when it is sent again. It uses the model and instructions of
// c, as [Model.Respond] would.
//
// Compact has the shape of middleware/compaction's Compactor, so a Model
// is one: compaction.Middleware(m, compaction.WithMaxTokens(n)). Failures
// are returned as [Model.Respond] returns them.
func (m *Model) Compact(ctx context.Context, c *pipeline.ModelCall, head state.Items) ([]state.Item, error) {
	name, err := m.cfg.modelName(c)
	if err != nil {
		return nil, err
	}
	params := responses.ResponseCompactParams{Model: responses.ResponseCompactParamsModel(name)}
	if c.Instructions != "" {
		params.Instructions = param.NewOpt(c.Instructions)
	}
	params.Input = param.Override[responses.ResponseCompactParamsInputUnion](json.RawMessage(appendInput(nil, head)))
	var (
		body []byte
		res  *http.Response
	)
	_, err = m.client.Responses.Compact(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res), option.WithResponseBodyInto(&body))...)
	status, reqID := responseMeta(res)
	if err != nil {
		return nil, translate(ctx, apiCompact, err, status, reqID)
	}
	var r struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, translate(ctx, apiCompact, &DecodeError{Where: "compacted response body", Err: err}, status, reqID)
	}
	items := make([]state.Item, len(r.Output))
	for i, raw := range r.Output {
		it, err := compactedItem(raw)
		if err != nil {
			return nil, translate(ctx, apiCompact, &DecodeError{Where: "compacted output[" + strconv.Itoa(i) + "]", Err: err}, status, reqID)
		}
		items[i] = it
	}
	return items, nil
}

// compactedItem converts an item of a compacted window: a user message,
// or what a response's output may hold (the compaction item is opaque).
func compactedItem(raw []byte) (state.Item, error) {
	var head struct {
		Type string `json:"type"`
		Role string `json:"role"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return state.Item{}, err
	}
	if head.Type != "message" || head.Role == "assistant" {
		return outputItem(raw)
	}
	kind := state.KindUserMessage
	switch head.Role {
	case "user":
	case "system", "developer":
		kind = state.KindSystemMessage
	default:
		return state.Item{}, fmt.Errorf("%w: message with role %q", ErrUnsupportedItem, head.Role)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return state.Item{}, err
	}
	return state.ParseItem(kind, buf.Bytes())
}
