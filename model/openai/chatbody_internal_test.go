package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestAppendNumberMatchesEncodingJSON checks that the Chat body writes a
// setting's number as encoding/json (and so openai-go's typed params)
// writes it.
func TestAppendNumberMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, math.Copysign(0, -1), 0.2, 1, 2, 0.9, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789.125, -3.25e-9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendNumber(nil, "temperature", f)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendNumber(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
}

// errTransport fails the test on any request.
type errTransport struct{ t *testing.T }

func (e errTransport) RoundTrip(*http.Request) (*http.Response, error) {
	e.t.Error("a request was sent")
	return nil, errors.New("no request expected")
}

// TestChatRefusesNonFiniteSettings checks that a temperature or top_p
// JSON cannot carry fails the call before the request, naming the
// setting.
func TestChatRefusesNonFiniteSettings(t *testing.T) {
	t.Parallel()
	client := sdk.NewClient(option.WithBaseURL("http://openai.invalid/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: errTransport{t}}), option.WithMaxRetries(0))
	m := NewChat(client)
	nan, inf := math.NaN(), math.Inf(1)
	for _, tt := range []struct {
		name, setting string
		settings      pipeline.ModelSettings
	}{
		{"temperature NaN", "temperature", pipeline.ModelSettings{Model: "gpt-4o-mini", Temperature: &nan}},
		{"top_p +Inf", "top_p", pipeline.ModelSettings{Model: "gpt-4o-mini", TopP: &inf}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &pipeline.ModelCall{Input: state.ItemsOf([]state.Item{state.UserMessage("Hi")}), Settings: tt.settings}
			_, err := m.Respond(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), "setting "+tt.setting) {
				t.Fatalf("Respond = %v, want an error naming setting %s", err, tt.setting)
			}
		})
	}
}

// echoTransport answers a chat completion whose text is the last user
// message of the request it received.
type echoTransport struct{}

func (echoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, err
	}
	text, _ := json.Marshal(req.Messages[len(req.Messages)-1].Content)
	body := `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` + string(text) + `},"finish_reason":"stop"}]}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestChatBodyBuffersAreNotShared checks that concurrent calls, whose
// request bodies' buffers are reused (bodyBufs), each send their own
// body.
func TestChatBodyBuffersAreNotShared(t *testing.T) {
	t.Parallel()
	client := sdk.NewClient(option.WithBaseURL("http://openai.invalid/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: echoTransport{}}), option.WithMaxRetries(0))
	m := NewChat(client, WithModel("gpt-4o-mini"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				text := fmt.Sprintf("call %d of goroutine %d%s", i, g, strings.Repeat(".", (g*25+i)%300))
				res, err := m.Respond(context.Background(), &pipeline.ModelCall{Input: state.ItemsOf([]state.Item{state.UserMessage(text)})})
				if err != nil {
					t.Error(err)
					return
				}
				if got := res.Items[0].Text(); got != text {
					t.Errorf("call %q was answered %q", text, got)
				}
			}
		})
	}
	wg.Wait()
}
