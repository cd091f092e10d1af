package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

const cityParameters = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`

// cityOf reads the city argument of a suite tool's call.
func cityOf(args string) (string, error) {
	var in struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", fmt.Errorf("modeltest: arguments %q: %w", args, err)
	}
	return in.City, nil
}

// weatherTool answers with text.
type weatherTool struct{}

func (weatherTool) Spec() pipeline.ToolSpec {
	return pipeline.ToolSpec{Name: WeatherTool, Description: "Current weather in a city.", Parameters: json.RawMessage(cityParameters), Strict: true}
}

func (weatherTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	city, err := cityOf(c.Arguments)
	if err != nil {
		return "", err
	}
	return "sunny, 22C in " + city, nil
}

// chartTool answers with a text part and an image part.
type chartTool struct{}

func (chartTool) Spec() pipeline.ToolSpec {
	return pipeline.ToolSpec{Name: ChartTool, Description: "A chart of the week's weather in a city, as an image.", Parameters: json.RawMessage(cityParameters), Strict: true}
}

func (t chartTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	text, _, err := t.CallContent(ctx, c)
	return text, err
}

func (chartTool) CallContent(ctx context.Context, c *pipeline.ToolCall) (string, []state.ContentPart, error) {
	city, err := cityOf(c.Arguments)
	if err != nil {
		return "", nil, err
	}
	parts := []state.ContentPart{
		state.TextPart("Chart for " + city + ":"),
		state.ImageURL("data:image/png;base64,"+ImagePNG, ""),
	}
	return state.JoinText(parts), parts, nil
}

// weatherOutput is the structured output of the structured cases: what
// tool.Output[Weather] makes, written out so that the suite needs no
// schema generator.
type weatherOutput struct{}

func (weatherOutput) OutputSpec() pipeline.OutputSpec {
	return pipeline.OutputSpec{
		Name: "weather", Description: "The weather in a city.",
		Schema: json.RawMessage(WeatherSchema), Strict: true, Type: reflect.TypeFor[Weather](),
	}
}

func (weatherOutput) Decode(text string) (any, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, &pipeline.OutputError{Raw: text, Err: err}
	}
	var w Weather
	for _, f := range []struct {
		name string
		dst  any
	}{{"city", &w.City}, {"celsius", &w.Celsius}} {
		raw, ok := m[f.name]
		if !ok {
			return nil, &pipeline.OutputError{Raw: text, Err: errors.New("missing required property " + f.name)}
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return nil, &pipeline.OutputError{Raw: text, Path: f.name, Err: fmt.Errorf("want %s", strings.TrimPrefix(reflect.TypeOf(f.dst).String(), "*"))}
		}
		delete(m, f.name)
	}
	for k := range m {
		return nil, &pipeline.OutputError{Raw: text, Path: k, Err: errors.New("unknown property")}
	}
	return w, nil
}
