package modeltest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

func usage(in, out, cached int64) state.Usage {
	return state.Usage{Requests: 1, InputTokens: in, OutputTokens: out, CachedTokens: cached}
}

// withCacheWrites returns u with n of its input tokens written to the
// prompt cache.
func withCacheWrites(u state.Usage, n int64) state.Usage {
	u.CacheWriteTokens = n
	return u
}

// Cases returns the suite's cases, new values on every call. A harness
// may read them to prepare its recorded payloads.
func Cases() []*Case {
	ask := pipeline.UserInput("What is the weather in Paris?")
	paris := Call{Name: WeatherTool, Arguments: `{"city":"Paris"}`}
	answer := "It is sunny and 22C in Paris."
	cases := []*Case{
		{
			Name:  "ToolCall",
			Input: ask,
			Turns: []Turn{
				{Calls: []Call{paris}, Usage: usage(310, 18, 0)},
				{Text: answer, Usage: usage(352, 12, 0)},
			},
			check: checkRun,
		},
		{
			Name:  "ParallelCalls",
			Input: pipeline.UserInput("Compare the weather in Paris and Tokyo."),
			Turns: []Turn{
				{Calls: []Call{paris, {Name: WeatherTool, Arguments: `{"city":"Tokyo"}`}}, Usage: usage(320, 36, 0)},
				{Text: "Both are sunny and 22C.", Usage: usage(401, 9, 0)},
			},
			check: checkRun,
		},
		{
			Name:  "MessageThenCall",
			Input: ask,
			Turns: []Turn{
				{Text: "Let me look that up.", Calls: []Call{paris}, Usage: usage(310, 25, 0)},
				{Text: answer, Usage: usage(360, 12, 0)},
			},
			check: checkRun,
		},
		{
			Name:  "StreamEqualsPlain",
			Input: ask,
			Turns: []Turn{
				{Text: "Let me look that up.", Calls: []Call{paris}, Usage: usage(310, 25, 0)},
				{Text: answer, Usage: usage(360, 12, 0)},
			},
			whole: checkStreamEqualsPlain,
		},
		{
			Name:       "StructuredOutput",
			Input:      ask,
			Structured: true,
			Turns:      []Turn{{Text: `{"city":"Paris","celsius":22}`, Usage: usage(120, 11, 0)}},
			check: func(t *testing.T, o *outcome) {
				checkRun(t, o)
				if body := o.bodies(); len(body) > 0 && !strings.Contains(string(body[0]), `"celsius"`) {
					t.Errorf("the request does not carry the output schema")
				}
				w, err := pipeline.OutputAs[Weather](o.res)
				if err != nil || w != (Weather{City: "Paris", Celsius: 22}) {
					t.Errorf("OutputAs = %+v, %v; want {Paris 22}", w, err)
				}
			},
		},
		{
			Name:       "StructuredOutputInvalid",
			Input:      ask,
			Structured: true,
			Turns:      []Turn{{Text: `{"city":"Paris","celsius":"warm"}`, Usage: usage(120, 12, 0)}},
			check: func(t *testing.T, o *outcome) {
				oe, ok := errors.AsType[*pipeline.OutputError](o.err)
				if !ok {
					t.Fatalf("run error = %v, want a *pipeline.OutputError", o.err)
				}
				if oe.Path != "celsius" || oe.Raw != o.c.Turns[0].Text {
					t.Errorf("OutputError Path %q Raw %q, want celsius and the model's text", oe.Path, oe.Raw)
				}
			},
		},
		{
			Name:       "StructuredOutputRefused",
			Input:      pipeline.UserInput("What is the weather in my neighbour's bedroom?"),
			Structured: true,
			Turns:      []Turn{{Refusal: "I can't help with that.", Usage: usage(120, 8, 0)}},
			check: func(t *testing.T, o *outcome) {
				re, ok := errors.AsType[*pipeline.RefusalError](o.err)
				if !ok {
					t.Fatalf("run error = %v, want a *pipeline.RefusalError", o.err)
				}
				if re.Refusal != o.c.Turns[0].Refusal {
					t.Errorf("refusal %q, want %q", re.Refusal, o.c.Turns[0].Refusal)
				}
			},
		},
		{
			Name: "ImageInput",
			Input: []state.Item{state.UserContent(
				state.TextPart("What is the weather like in this picture?"),
				state.ImageURL("data:image/png;base64,"+ImagePNG, ""),
			)},
			Turns:       []Turn{{Text: "A single grey pixel: overcast, I would say.", Usage: usage(95, 10, 0)}},
			Feature:     FeatureImageInput,
			FeatureTurn: 0,
			check:       checkImage,
		},
		{
			Name:  "ImageToolOutput",
			Input: pipeline.UserInput("Show me the week's weather chart for Paris."),
			Turns: []Turn{
				{Calls: []Call{{Name: ChartTool, Arguments: `{"city":"Paris"}`}}, Usage: usage(300, 17, 0)},
				{Text: "The chart shows a sunny week.", Usage: usage(390, 8, 0)},
			},
			Feature:     FeatureToolOutputImage,
			FeatureTurn: 1,
			check:       checkImage,
		},
		apiError("Error400", http.StatusBadRequest, "messages: field required"),
		apiError("Error429", http.StatusTooManyRequests, "rate limit reached"),
		apiError("Error500", http.StatusInternalServerError, "internal server error"),
		{
			Name:       "CancelMidStream",
			Input:      ask,
			StreamOnly: true,
			Turns:      []Turn{{Text: answer, Cut: true, Usage: usage(100, 12, 0)}},
			check: func(t *testing.T, o *outcome) {
				if !errors.Is(o.err, context.Canceled) {
					t.Fatalf("run error = %v, want context.Canceled", o.err)
				}
				if len(o.deltas) == 0 {
					t.Fatal("no text delta before the cut")
				}
				if st, ok := pipeline.StateOf(o.err); ok {
					for _, it := range st.Items().All() {
						if it.Kind() == state.KindAssistantMessage {
							t.Errorf("a cancelled call recorded %v", it)
						}
					}
				}
			},
		},
		{
			Name:  "Usage",
			Input: ask,
			Turns: []Turn{
				{Calls: []Call{paris}, Usage: withCacheWrites(usage(2400, 18, 2048), 256)},
				{Text: answer, Usage: usage(2450, 12, 2304)},
			},
			check: checkRun,
		},
	}
	return cases
}

func apiError(name string, status int, msg string) *Case {
	return &Case{
		Name:  name,
		Input: pipeline.UserInput("What is the weather in Paris?"),
		Turns: []Turn{{Err: &APIError{Status: status, RequestID: "req_" + strings.ToLower(name), Message: msg}}},
		check: checkError,
	}
}

// checkImage checks a run with an image: it finishes, and the request that
// carries the image carries its bytes.
func checkImage(t *testing.T, o *outcome) {
	t.Helper()
	checkRun(t, o)
	if bodies := o.bodies(); o.c.FeatureTurn < len(bodies) {
		if !strings.Contains(string(bodies[o.c.FeatureTurn]), ImagePNG) {
			t.Errorf("request %d does not carry the image", o.c.FeatureTurn+1)
		}
	}
}

// checkStreamEqualsPlain runs the case plain and streamed: both must pass
// checkRun and record the same items (kinds, call IDs, names and JSON),
// output and usage.
func checkStreamEqualsPlain(t *testing.T, h Harness, c *Case) {
	plain := runCase(t, h, c, false)
	checkRun(t, plain)
	stream := runCase(t, h, c, true)
	checkRun(t, stream)
	if t.Failed() {
		return
	}
	a, b := plain.res.NewItems(), stream.res.NewItems()
	if len(a) != len(b) {
		t.Fatalf("plain run recorded %d items, streamed %d:\n%v\n%v", len(a), len(b), a, b)
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			t.Errorf("item %d: plain %v %s, streamed %v %s", i, a[i], a[i].Raw(), b[i], b[i].Raw())
		}
	}
	if len(stream.deltas) == 0 {
		t.Error("the streamed run emitted no text delta")
	}
}
