package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// The Gemini adapter's own cost: one model call through model/gemini
// (building the request from the run's items, reading the response into
// items) against the same call made with the genai client alone, on the
// same contents, over an in-memory transport that answers with a recorded
// body, so that neither the network nor a server is measured.

const (
	geminiAnswer = `{"candidates":[{"content":{"parts":[{"text":"It is sunny in Paris, 22 degrees.","thoughtSignature":"c2lnbmF0dXJlLW9mLXRoZS10ZXh0"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":152,"candidatesTokenCount":11,"totalTokenCount":163},"modelVersion":"gemini-2.5-flash","responseId":"zYxWvUtSrQpOnMlKjIhGfE"}`
	geminiStream = `data: {"candidates":[{"content":{"parts":[{"text":"It is sunny "}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"zYxWvUtSrQpOnMlKjIhGfE"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"in Paris, "}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"zYxWvUtSrQpOnMlKjIhGfE"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"22 degrees."}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"zYxWvUtSrQpOnMlKjIhGfE"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2lnbmF0dXJlLW9mLXRoZS10ZXh0"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":152,"candidatesTokenCount":11,"totalTokenCount":163},"modelVersion":"gemini-2.5-flash","responseId":"zYxWvUtSrQpOnMlKjIhGfE"}` + "\r\n\r\n"
)

// recordedTransport answers every request with a recorded body, after
// reading the request's.
type recordedTransport struct{}

func (recordedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	body, ct := geminiAnswer, "application/json"
	if strings.Contains(r.URL.Path, "streamGenerateContent") {
		body, ct = geminiStream, "text/event-stream"
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}, nil
}

// geminiHistory returns n items of a tool-using history (user message,
// call, output, assistant message, repeated) and the same history as
// genai contents, as the adapter sends it.
func geminiHistory(n int) ([]state.Item, []*genai.Content) {
	items := make([]state.Item, 0, n)
	var contents []*genai.Content
	add := func(role string, p *genai.Part) {
		if k := len(contents); k > 0 && contents[k-1].Role == role {
			contents[k-1].Parts = append(contents[k-1].Parts, p)
			return
		}
		contents = append(contents, &genai.Content{Role: role, Parts: []*genai.Part{p}})
	}
	for i := 0; len(items) < n; i++ {
		id := strconv.Itoa(i)
		steps := []func(){
			func() {
				items = append(items, state.UserMessage("What is the weather in city "+id+"?"))
				add(genai.RoleUser, &genai.Part{Text: "What is the weather in city " + id + "?"})
			},
			func() {
				items = append(items, state.ToolCall("", "fc-"+id, "get_weather", `{"location":"city `+id+`"}`))
				add(genai.RoleModel, &genai.Part{FunctionCall: &genai.FunctionCall{ID: "fc-" + id, Name: "get_weather", Args: map[string]any{"location": "city " + id}}})
			},
			func() {
				items = append(items, state.ToolOutput("fc-"+id, "get_weather", "sunny, 22 degrees"))
				add(genai.RoleUser, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "fc-" + id, Name: "get_weather", Response: map[string]any{"output": "sunny, 22 degrees"}}})
			},
			func() {
				items = append(items, state.AssistantMessage("", "It is sunny in city "+id+", 22 degrees."))
				add(genai.RoleModel, &genai.Part{Text: "It is sunny in city " + id + ", 22 degrees."})
			},
		}
		for _, step := range steps {
			if len(items) < n {
				step()
			}
		}
	}
	items = append(items, state.UserMessage("And in Paris?"))
	add(genai.RoleUser, &genai.Part{Text: "And in Paris?"})
	return items, contents
}

var (
	geminiParams = json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`)
	sinkResp     *pipeline.ModelResponse
	sinkGenAI    *genai.GenerateContentResponse
)

// BenchmarkGemini measures a model call at 10 and 100 items of history,
// plain and streamed: the genai client alone (sdk), then through the
// adapter (adapter), each with its allocations; then both, one after the
// other in each iteration and in turn first (vs), so that they share the
// machine's load: its "×sdk" metric is the adapter's time over the SDK's (1.05 means the
// adapter's own work adds 5%).
func BenchmarkGemini(b *testing.B) {
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "bench", Backend: genai.BackendGeminiAPI,
		HTTPClient: &http.Client{Transport: recordedTransport{}},
	})
	if err != nil {
		b.Fatal(err)
	}
	model := gemini.New(client)
	for _, stream := range []bool{false, true} {
		mode := "plain"
		if stream {
			mode = "stream"
		}
		for _, n := range []int{10, 100} {
			sdkCall, adapterCall := geminiCalls(client, model, stream, n)
			key := fmt.Sprintf("%s/items=%d", mode, n)
			b.Run(key+"/sdk", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err = sdkCall(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(key+"/adapter", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err = adapterCall(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(key+"/vs", func(b *testing.B) {
				var sdk, adapter []time.Duration
				for i := 0; b.Loop(); i++ {
					// The order alternates, so that neither call always
					// runs into a collection the other's garbage started.
					if i%2 == 0 {
						sdk = append(sdk, timed(b, sdkCall))
						adapter = append(adapter, timed(b, adapterCall))
					} else {
						adapter = append(adapter, timed(b, adapterCall))
						sdk = append(sdk, timed(b, sdkCall))
					}
				}
				// Medians, which the machine's other work moves least.
				ms, ma := median(sdk), median(adapter)
				b.ReportMetric(float64(ms), "sdk-ns/call")
				b.ReportMetric(float64(ma), "adapter-ns/call")
				b.ReportMetric(float64(ma)/float64(ms), "×sdk")
			})
		}
	}
}

// timed returns how long f took; it stops b when f fails.
func timed(b *testing.B, f func() error) time.Duration {
	t := time.Now()
	err := f()
	d := time.Since(t)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// geminiCalls returns the call of BenchmarkGemini's rows at n items of
// history, plain or streamed: with the genai client alone (sdk) and
// through model (adapter).
func geminiCalls(client *genai.Client, model pipeline.Model, stream bool, n int) (sdk, adapter func() error) {
	ctx := context.Background()
	items, contents := geminiHistory(n)
	sdk = func() error {
		config := &genai.GenerateContentConfig{
			SystemInstruction: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "Answer weather questions."}}},
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
				Name: "get_weather", Description: "Get the weather for a location.", ParametersJsonSchema: geminiParams,
			}}}},
		}
		if !stream {
			var err error
			sinkGenAI, err = client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
			return err
		}
		for chunk, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, config) {
			if err != nil {
				return err
			}
			sinkGenAI = chunk
		}
		return nil
	}
	c := &pipeline.ModelCall{
		Instructions: "Answer weather questions.", Input: state.ItemsOf(items), Stream: stream,
		Tools:    []pipeline.ToolSpec{{Name: "get_weather", Description: "Get the weather for a location.", Parameters: geminiParams, Strict: true}},
		Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
	}
	adapter = func() error {
		var err error
		sinkResp, err = model.Respond(ctx, c)
		return err
	}
	return sdk, adapter
}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
