package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// hostile is what the user typed: markup that would run if a page put it
// in as HTML.
const hostile = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">refund order 7`

// chromium returns the path of a Chromium binary, or ends the test (a
// skip, or a failure in CI) when there is none.
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("TURNKIT_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no Chromium: install Debian's chromium (.ci/services does) or set TURNKIT_CHROMIUM")
	return ""
}

// newAgent is a support agent whose refund tool needs approval, on a
// model that asks for the refund and then reports the tool's output.
func newAgent() *pipeline.Agent {
	refund := pipeline.NewTool(pipeline.ToolSpec{
		Name:       "refund",
		Parameters: json.RawMessage(`{"type":"object","properties":{"order":{"type":"integer"}},"required":["order"],"additionalProperties":false}`),
		Strict:     true,
	}, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Order int }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return "refunded order " + strings.Repeat("7", min(in.Order, 1)), nil
	})
	model := pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		last := c.Input.At(c.Input.Len() - 1)
		if last.Kind() != state.KindToolOutput {
			return &pipeline.ModelResponse{Items: []state.Item{
				state.ToolCall("fc_1", "call_refund", "refund", `{"order":7}`),
			}}, nil
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_1", "Done: "+last.Text()+".")}}, nil
	})
	return &pipeline.Agent{Name: "support", Model: model, Tools: []pipeline.Tool{refund}}
}

func TestInspectorInBrowser(t *testing.T) {
	exe := chromium(t)
	ctx := t.Context()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	agent := newAgent()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store),
		approval.Require(approval.ByTool("refund")),
	))
	res, err := runner.Run(ctx, agent, pipeline.UserInput(hostile), pipeline.WithRunID("run-1"), pipeline.WithSessionID("support-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() {
		t.Fatal("the run did not pause for the refund's approval")
	}
	if err := store.Save(ctx, res.State()); err != nil {
		t.Fatal(err)
	}

	// The same stores behind two handlers: one whose authorization hook
	// refuses every write, one that allows them and resumes the run.
	resume := func(ctx context.Context, run *state.Run) error {
		_, err := approval.Resume(ctx, store, runner, agent, run)
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/denied/", http.StripPrefix("/denied", inspect.New(store, store, inspect.WithWrites(
		func(*http.Request) error { return errors.New("no operator is signed in") }, resume))))
	mux.Handle("/ops/", http.StripPrefix("/ops", inspect.New(store, store, inspect.WithWrites(
		func(*http.Request) error { return nil }, resume))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1100, 760))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	browser := bctx
	// The list, then the session, by clicking.
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			body, _ := chromedp.Run(browser, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("browser: %v; the page:\n%s", err, body)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("browser: text of %s: %v", sel, err)
		}
		return s
	}
	do(chromedp.Navigate(srv.URL + "/ops/")) // starts the browser: no timeout on this first call
	ctx2, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	bctx = ctx2
	sessions := text("#sessions")
	do(chromedp.Click(chromedp.CSS(`#sessions a[href^="session?id="]`)), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	timeline := text("#timeline")
	pwned, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}

	// A write the authorization hook refuses.
	do(chromedp.Navigate(srv.URL+"/denied/run?id=run-1"),
		chromedp.Click(chromedp.CSS(`button[name="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	deniedPage := text("#error")

	// The paused run from the runs list, approved.
	do(chromedp.Navigate(srv.URL+"/ops/runs?status=paused"),
		chromedp.Click(chromedp.CSS(`#runs a[href="run?id=run-1"]`)),
		chromedp.WaitVisible(chromedp.CSS("#pending")))
	runPage := text("#pending")
	if path := os.Getenv("TURNKIT_INSPECT_SCREENSHOT"); path != "" {
		// The README's picture of a run waiting for approval.
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("browser: screenshot: %v", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(chromedp.Click(chromedp.CSS(`button[name="approve"]`)), chromedp.WaitVisible(chromedp.CSS("#notice")))

	// The resumed run's output in the session's timeline.
	do(chromedp.Navigate(srv.URL+"/ops/session?id=support-1"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	after := text("#timeline")

	if !strings.Contains(sessions, "support-1") {
		t.Errorf("the sessions list lacks support-1: %q", sessions)
	}
	if !strings.Contains(timeline, hostile) {
		t.Errorf("the timeline does not show the hostile message as text: %q", timeline)
	}
	if pwned {
		t.Error("the hostile message ran as markup (window.pwned is set)")
	}
	if !strings.Contains(deniedPage, "no operator is signed in") {
		t.Errorf("the refused write's page: %q", deniedPage)
	}
	if !strings.Contains(runPage, "refund") || !strings.Contains(runPage, `{"order":7}`) {
		t.Errorf("the run page lacks the pending call and its arguments: %q", runPage)
	}
	if !strings.Contains(after, "refunded order 7") || !strings.Contains(after, "Done: refunded order 7.") {
		t.Errorf("the timeline lacks the resumed run's output: %q", after)
	}
	// Inline, at their places: the decision at the call, each model
	// call's usage at its response.
	for _, want := range []string{"decision on refund: approved", "model call, turn 1, agent support", "model call, turn 2, agent support"} {
		if !strings.Contains(after, want) {
			t.Errorf("the timeline lacks %q inline: %q", want, after)
		}
	}
	run, err := store.Load(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := run.FinalOutput(); !ok || out != "Done: refunded order 7." {
		t.Errorf("the stored run: final output %q (finished %v)", out, ok)
	}
}
