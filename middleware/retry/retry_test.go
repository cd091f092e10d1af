package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/retry"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rateLimited is a retryable model error; after, if not zero, is the wait
// the server asked for.
func rateLimited(after time.Duration) error {
	return &pipeline.ModelError{Status: 429, Retryable: true, RetryAfter: after, Err: errors.New("openai: rate limited")}
}

var badRequest = &pipeline.ModelError{Status: 400, Err: errors.New("openai: invalid value")}

// sleeper records the waits asked of it and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// opts returns the deterministic options of the tests: the recorded
// sleep, jitter at its middle, a 100ms base.
func opts(s *sleeper, more ...retry.Option) []retry.Option {
	return append([]retry.Option{
		retry.WithSleep(s.sleep), retry.WithRandom(func() float64 { return 0.5 }),
		retry.WithBackoff(100*time.Millisecond, time.Second),
	}, more...)
}

func run(t *testing.T, m pipeline.Model, ropts []retry.Option, popts ...pipeline.Option) (*pipeline.Result, error) {
	t.Helper()
	runner := pipeline.NewRunner(append(popts, pipeline.WithMiddleware(retry.Middleware(ropts...)))...)
	return runner.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi"))
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		steps     []scripted.Step
		opts      []retry.Option
		want      string // final output; "" for an error
		waits     []time.Duration
		attempts  int // of the *retry.Error
		calls     int
		wantErr   error
		wantInMsg string
	}{
		{
			name:  "retryable errors then success",
			steps: []scripted.Step{scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Reply("ok")},
			want:  "ok", calls: 3,
			// base 100ms: the first wait is drawn in [50ms, 100ms], the
			// second in [100ms, 200ms]; the jitter is at its middle.
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond},
		},
		{
			name:  "Retry-After wins over the backoff",
			steps: []scripted.Step{scripted.Fail(rateLimited(7 * time.Second)), scripted.Reply("ok")},
			want:  "ok", calls: 2, waits: []time.Duration{7 * time.Second},
		},
		{
			name:  "backoff capped",
			steps: []scripted.Step{scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Reply("ok")},
			opts:  []retry.Option{retry.WithAttempts(5), retry.WithBackoff(400*time.Millisecond, time.Second)},
			want:  "ok", calls: 5,
			waits: []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond},
		},
		{
			name:  "attempts used up",
			steps: []scripted.Step{scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Reply("never")},
			calls: 3, attempts: 3, wantErr: pipeline.ErrModel, wantInMsg: "after 3 attempts",
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond},
		},
		{
			name:  "not retryable",
			steps: []scripted.Step{scripted.Fail(badRequest), scripted.Reply("never")},
			calls: 1, attempts: 1, wantErr: pipeline.ErrModel, wantInMsg: "after 1 attempt:",
		},
		{
			name:  "retry class",
			steps: []scripted.Step{scripted.Fail(badRequest), scripted.Reply("ok")},
			opts:  []retry.Option{retry.WithRetryOn(retry.Status(400))},
			want:  "ok", calls: 2, waits: []time.Duration{75 * time.Millisecond},
		},
		{
			name:  "one attempt",
			steps: []scripted.Step{scripted.Fail(rateLimited(0)), scripted.Reply("never")},
			opts:  []retry.Option{retry.WithAttempts(1)},
			calls: 1, attempts: 1, wantErr: pipeline.ErrModel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &sleeper{}
			m := scripted.New(tt.steps...)
			res, err := run(t, m, opts(s, tt.opts...))
			if got := len(m.Calls()); got != tt.calls {
				t.Errorf("model called %d times, want %d", got, tt.calls)
			}
			if diff := cmp.Diff(tt.waits, s.got()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if tt.wantErr == nil {
				if err != nil || res.FinalOutput() != tt.want {
					t.Fatalf("run = %q, %v; want %q", res.FinalOutput(), err, tt.want)
				}
				if u := res.State().Usage(); u.Requests != 1 {
					t.Errorf("usage counts %d requests, want the one that answered", u.Requests)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			re, ok := errors.AsType[*retry.Error](err)
			if !ok {
				t.Fatalf("err = %T %v, want a *retry.Error", err, err)
			}
			if re.Attempts != tt.attempts || re.Models != 1 || re.Stopped != nil {
				t.Errorf("Error = %+v, want %d attempts on 1 model, not stopped", re, tt.attempts)
			}
			if _, ok := errors.AsType[*pipeline.ModelError](err); !ok {
				t.Errorf("err %v does not wrap the last *pipeline.ModelError", err)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantInMsg)
			}
			if st, ok := pipeline.StateOf(err); !ok || st.Len() != 1 {
				t.Errorf("StateOf(err) = %v, %v; want the state with the input only", st, ok)
			}
		})
	}
}

// The wait is measured against the context's deadline on the injected
// clock: a retry that would start after it is not waited for.
func TestDeadlineStopsRetries(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	now := deadline.Add(-5 * time.Second) // the injected clock: 5s before the deadline
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	s := &sleeper{}
	m := scripted.New(scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(6*time.Second)), scripted.Reply("never"))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(opts(s, retry.WithClock(func() time.Time { return now }))...)))
	_, err := runner.Run(ctx, &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi"))
	if !errors.Is(err, retry.ErrDeadline) {
		t.Fatalf("err = %v, want ErrDeadline", err)
	}
	re, _ := errors.AsType[*retry.Error](err)
	if re == nil || re.Attempts != 2 {
		t.Fatalf("err = %#v, want a *retry.Error of 2 attempts", err)
	}
	if diff := cmp.Diff([]time.Duration{75 * time.Millisecond}, s.got()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if len(m.Calls()) != 2 {
		t.Errorf("model called %d times, want 2", len(m.Calls()))
	}
}

// A run cancelled while the middleware waits returns at once, with the
// attempts made and the context's error.
func TestCancelledDuringWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := scripted.New(scripted.Fail(rateLimited(0)), scripted.Reply("never"))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(retry.WithSleep(func(ctx context.Context, _ time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}))))
	_, err := runner.Run(ctx, &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if re, ok := errors.AsType[*retry.Error](err); !ok || re.Attempts != 1 {
		t.Fatalf("err = %v, want a *retry.Error of 1 attempt", err)
	}
	if len(m.Calls()) != 1 {
		t.Errorf("model called %d times, want 1", len(m.Calls()))
	}
}

// settingsModel answers with the model name of its call's settings, or
// fails with err.
func settingsModel(err error) (pipeline.Model, *[]string) {
	var (
		mu    sync.Mutex
		names []string
	)
	return pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		mu.Lock()
		names = append(names, c.Settings.Model)
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("", "from "+c.Settings.Model)}}, nil
	}), &names
}

func TestFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		primary   error
		fallbacks func(ok, failing pipeline.Model) []retry.Fallback
		want      string
		waits     []time.Duration
		attempts  int // of the *retry.Error, when the call fails
		models    int
		okCalls   int
	}{
		{
			name:    "after the retries",
			primary: rateLimited(0),
			fallbacks: func(ok, _ pipeline.Model) []retry.Fallback {
				return []retry.Fallback{{Model: ok, Name: "backup-model"}}
			},
			want: "from backup-model", okCalls: 1,
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond},
		},
		{
			name:    "not on another class",
			primary: badRequest,
			fallbacks: func(ok, _ pipeline.Model) []retry.Fallback {
				return []retry.Fallback{{Model: ok}}
			},
			attempts: 1, models: 1,
		},
		{
			name:    "on its class",
			primary: badRequest,
			fallbacks: func(ok, _ pipeline.Model) []retry.Fallback {
				return []retry.Fallback{{Model: ok, Name: "bigger", On: retry.Status(400)}}
			},
			want: "from bigger", okCalls: 1,
		},
		{
			name:    "in order, each retried",
			primary: rateLimited(0),
			fallbacks: func(ok, failing pipeline.Model) []retry.Fallback {
				return []retry.Fallback{{Model: failing, Name: "second"}, {Model: ok, Name: "third"}}
			},
			want: "from third", okCalls: 1,
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 75 * time.Millisecond, 150 * time.Millisecond},
		},
		{
			name:    "every model fails",
			primary: rateLimited(0),
			fallbacks: func(_, failing pipeline.Model) []retry.Fallback {
				return []retry.Fallback{{Model: failing, Name: "second"}}
			},
			attempts: 6, models: 2,
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 75 * time.Millisecond, 150 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary, primaryNames := settingsModel(tt.primary)
			ok, okNames := settingsModel(nil)
			failing, _ := settingsModel(rateLimited(0))
			s := &sleeper{}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(opts(s, retry.WithFallback(tt.fallbacks(ok, failing)...))...)))
			agent := &pipeline.Agent{Name: "a", Model: primary, Settings: pipeline.ModelSettings{Model: "main-model"}}
			res, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi"))
			if diff := cmp.Diff(tt.waits, s.got()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			for _, n := range *primaryNames {
				if n != "main-model" {
					t.Errorf("the agent's model was called with model %q", n)
				}
			}
			if len(*okNames) != tt.okCalls {
				t.Errorf("fallback called %d times, want %d", len(*okNames), tt.okCalls)
			}
			if tt.want == "" {
				re, isRetry := errors.AsType[*retry.Error](err)
				if !isRetry || re.Attempts != tt.attempts || re.Models != tt.models {
					t.Fatalf("err = %v, want a *retry.Error of %d attempts on %d models", err, tt.attempts, tt.models)
				}
				return
			}
			if err != nil || res.FinalOutput() != tt.want {
				t.Fatalf("run = %q, %v; want %q", res.FinalOutput(), err, tt.want)
			}
		})
	}
}

// streamingModel sends a text delta (if delta) and fails with err, then
// answers.
func streamingModel(delta bool, err error) (pipeline.Model, func() int) {
	var (
		mu sync.Mutex
		n  int
	)
	return pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			mu.Lock()
			n++
			first := n == 1
			mu.Unlock()
			if first {
				if delta {
					c.Emit(pipeline.TextDelta{Delta: "Hel"})
				}
				return nil, err
			}
			c.Emit(pipeline.TextDelta{Delta: "Hello"})
			return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("", "Hello")}}, nil
		}), func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// A streamed call is retried only while none of its events reached the
// stream.
func TestStreamRetriedOnlyBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "before", true: "after"}[delta], func(t *testing.T) {
			t.Parallel()
			m, calls := streamingModel(delta, rateLimited(0))
			runner := pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(opts(&sleeper{})...)))
			var (
				deltas  []string
				lastErr error
			)
			for ev, err := range runner.Stream(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi")) {
				if err != nil {
					lastErr = err
					break
				}
				if d, ok := ev.(pipeline.TextDelta); ok {
					deltas = append(deltas, d.Delta)
				}
			}
			if !delta {
				if lastErr != nil || calls() != 2 || !cmp.Equal(deltas, []string{"Hello"}) {
					t.Fatalf("stream: err %v, %d calls, deltas %q; want a retried call and its delta only", lastErr, calls(), deltas)
				}
				return
			}
			if !errors.Is(lastErr, retry.ErrStreamed) || calls() != 1 || !cmp.Equal(deltas, []string{"Hel"}) {
				t.Fatalf("stream: err %v, %d calls, deltas %q; want ErrStreamed after one call", lastErr, calls(), deltas)
			}
			if re, _ := errors.AsType[*retry.Error](lastErr); re == nil || re.Attempts != 1 {
				t.Errorf("err = %v, want a *retry.Error of 1 attempt", lastErr)
			}
		})
	}
}

// Every attempt is a chat span of its own with its error, under the
// turn's span; the stages inside the retry observe each attempt once.
func TestEachAttemptIsASpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var (
		mu       sync.Mutex
		observed []error
	)
	observer := pipeline.Middleware{Name: "observer", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			c.Observe(func(ctx context.Context) (context.Context, func(*pipeline.ModelResponse, error)) {
				return ctx, func(_ *pipeline.ModelResponse, err error) {
					mu.Lock()
					observed = append(observed, err)
					mu.Unlock()
				}
			})
			return next.Respond(ctx, c)
		})
	}}
	m := scripted.New(scripted.Fail(rateLimited(0)), scripted.Fail(rateLimited(0)), scripted.Reply("ok"))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		tracing.Middleware(tracing.WithTracerProvider(tp)),
		retry.Middleware(opts(&sleeper{})...),
		observer,
	))
	agent := &pipeline.Agent{Name: "a", Model: m, Settings: pipeline.ModelSettings{Model: "main-model"}}
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	var chats []sdktrace.ReadOnlySpan
	var turn sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch {
		case s.Name() == "chat main-model":
			chats = append(chats, s)
		case s.Name() == "turn" || strings.HasPrefix(s.Name(), "turn"):
			turn = s
		}
	}
	if len(chats) != 3 || turn == nil {
		t.Fatalf("spans: %d chat spans and turn %v, want 3 and a turn", len(chats), turn)
	}
	for i, s := range chats {
		wantErr := i < 2
		if (s.Status().Code == codes.Error) != wantErr {
			t.Errorf("chat span %d: status %v, want error %v", i, s.Status(), wantErr)
		}
		if s.Parent().SpanID() != turn.SpanContext().SpanID() {
			t.Errorf("chat span %d is not a child of the turn's span", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(observed) != 3 || observed[0] == nil || observed[1] == nil || observed[2] != nil {
		t.Errorf("the inner observer saw %v, want each attempt once: two errors, then success", observed)
	}
}

// partialModel fails its first call with a response beside the error, as
// a model cut off mid-answer might, then answers with a tool call and a
// final message.
func partialModel() pipeline.Model {
	var (
		mu sync.Mutex
		n  int
	)
	return pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		switch k {
		case 1:
			return &pipeline.ModelResponse{Items: []state.Item{
				state.AssistantMessage("msg_partial", "PARTIAL"),
				state.ToolCall("fc_partial", "call_partial", "lookup", `{}`),
			}}, &pipeline.ModelError{Status: 200, Retryable: true, Err: errors.New("openai: stream ended before the response completed")}
		case 2:
			return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_1", "call_1", "lookup", `{}`)}}, nil
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_2", "done")}}, nil
	})
}

// savingStore keeps a copy of every state saved.
type savingStore struct {
	*memstore.Store
	mu    sync.Mutex
	saved []*state.Run
}

func (s *savingStore) Save(ctx context.Context, run *state.Run) error {
	s.mu.Lock()
	s.saved = append(s.saved, run.Clone())
	s.mu.Unlock()
	return s.Store.Save(ctx, run)
}

// No checkpoint and no session ever holds anything of a failed attempt,
// even one that returned a partial response beside its error.
func TestCheckpointNeverRecordsAFailedAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := &savingStore{Store: memstore.New()}
	sessions := memory.New()
	cp := checkpoint.New(states, checkpoint.WithSession(sessions))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Checkpoint: cp.Middleware(),
		Extra:      []pipeline.Middleware{retry.Middleware(opts(&sleeper{})...)},
	}.Middleware()...))
	lookup := pipeline.NewTool(pipeline.ToolSpec{Name: "lookup"}, func(context.Context, json.RawMessage) (string, error) { return "found", nil })
	agent := &pipeline.Agent{Name: "a", Model: partialModel(), Tools: []pipeline.Tool{lookup}}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithRunID("r1"), pipeline.WithSessionID("s1"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	states.mu.Lock()
	saved := states.saved
	states.mu.Unlock()
	if len(saved) == 0 {
		t.Fatal("no checkpoint saved")
	}
	check := func(where string, items []state.Item) {
		for _, it := range items {
			if strings.Contains(it.Text(), "PARTIAL") || it.CallID() == "call_partial" {
				t.Errorf("%s holds %v of the failed attempt", where, it)
			}
		}
	}
	for i, run := range saved {
		check(fmt.Sprintf("save %d", i), run.Items().Slice())
	}
	loaded, err := states.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	check("the loaded checkpoint", loaded.Items().Slice())
	if loaded.Len() != 4 { // input, call, output, message
		t.Errorf("checkpoint has %d items, want 4", loaded.Len())
	}
	items, err := sessions.List(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	check("the session", items)
}
