package handoff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/turnkit/turnkit/internal/providerfake"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The recorded payloads: OpenAI's and Anthropic's in model/anthropic's
// testdata, Gemini's in model/gemini's.
var (
	anthropicData = filepath.Join("..", "..", "..", "anthropic", "testdata")
	geminiData    = filepath.Join("..", "..", "testdata")
)

// resumeDirEnv, when set, makes TestResumeChild the fresh process that
// resumes the paused run from the SQLite checkpoint in that directory.
const resumeDirEnv = "TURNKIT_GEMINI_HANDOFF_RESUME_DIR"

const resumeRunID = "run-three-providers"

// fakes are the three providers' fake APIs, each answering with the
// recorded payloads it was given.
type fakes struct {
	openai, anthropic, gemini *providerfake.Server
}

func newFakes(t *testing.T, oa, an, ge []string) fakes {
	t.Helper()
	return fakes{
		openai:    providerfake.New(t, anthropicData, oa...),
		anthropic: providerfake.Messages(t, anthropicData, an...),
		gemini:    providerfake.New(t, geminiData, ge...),
	}
}

// agents returns the chain over the fakes: triage on OpenAI hands off to
// weather on Anthropic (with thinking and a get_weather tool), which
// hands off to forecaster on Gemini.
func (f fakes) agents(t *testing.T) *pipeline.Agent {
	t.Helper()
	oa := openaisdk.NewClient(openaiopt.WithBaseURL(f.openai.URL+"/v1/"), openaiopt.WithAPIKey("sk-test"),
		openaiopt.WithHTTPClient(f.openai.Client()), openaiopt.WithMaxRetries(0))
	an := anthropicsdk.NewClient(anthropicopt.WithBaseURL(f.anthropic.URL), anthropicopt.WithAPIKey("sk-ant-test"),
		anthropicopt.WithHTTPClient(f.anthropic.Client()), anthropicopt.WithMaxRetries(0))
	ge, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPClient: f.gemini.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: f.gemini.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	triage := &pipeline.Agent{Name: "triage", Model: openai.New(oa, openai.WithModel("gpt-5-mini"))}
	weather := &pipeline.Agent{
		Name:  "weather",
		Model: anthropic.New(an, anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048)),
		Tools: []pipeline.Tool{pipeline.NewTool(pipeline.ToolSpec{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			func(ctx context.Context, args json.RawMessage) (string, error) { return "sunny, 22C", nil })},
	}
	forecaster := &pipeline.Agent{Name: "forecaster", Model: gemini.New(ge), Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"}}
	triage.Handoffs = []pipeline.Handoff{{Agent: weather}}
	weather.Handoffs = []pipeline.Handoff{{Agent: forecaster}}
	return triage
}

// crashSafe returns the SQLite store in dir and a runner that checkpoints
// every turn and asks for approval of get_weather.
func crashSafe(t *testing.T, dir string) (*sqlite.Store, *pipeline.Runner) {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	return store, pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Checkpoint: cp.Middleware(),
		Approval:   approval.Require(approval.ByTool("get_weather")),
	}.Middleware()...))
}

// resumed is what the fresh process hands back: the finished run and the
// request each provider got after the resume.
type resumed struct {
	Run       json.RawMessage
	Anthropic []byte
	Gemini    []byte
}

// TestThreeProvidersResumedInFreshProcess: OpenAI hands off to Anthropic,
// which thinks and calls get_weather; the run pauses on the call's
// approval. A separate process (this test binary again) loads the SQLite
// checkpoint, approves and resumes with models of its own: Anthropic
// hands off to Gemini, which answers. The resumed run finishes with the
// items, byte for byte, and the model requests of a run that went
// straight through; Gemini is sent neither provider's reasoning.
func TestThreeProvidersResumedInFreshProcess(t *testing.T) {
	ctx := context.Background()
	input := pipeline.UserInput("What is the weather in Paris?")

	// Straight through, no approval asked.
	f := newFakes(t, []string{"openai_handoff.json"}, []string{"thinking_tool_use.json", "handoff_forecaster.json"}, []string{"text.json"})
	straight, err := pipeline.NewRunner().Run(ctx, f.agents(t), input)
	if err != nil {
		t.Fatal(err)
	}
	if straight.LastAgent().Name != "forecaster" || straight.FinalOutput() != "It is sunny in Paris and in Tokyo." {
		t.Fatalf("straight run ended with %q by %s", straight.FinalOutput(), straight.LastAgent().Name)
	}
	geminiSent := f.gemini.Bodies()
	if len(geminiSent) != 1 {
		t.Fatalf("%d Gemini requests, want 1", len(geminiSent))
	}
	for _, leak := range []string{"encrypted_content", "openai_only", "signature", "EpIBCkQY", "redacted"} {
		if bytes.Contains(geminiSent[0], []byte(leak)) {
			t.Errorf("Gemini's request carries another provider's reasoning (%s): %s", leak, geminiSent[0])
		}
	}
	if !strings.Contains(string(geminiSent[0]), `"name":"get_weather"`) || !strings.Contains(string(geminiSent[0]), `"name":"transfer_to_forecaster"`) {
		t.Errorf("Gemini's request lacks Anthropic's calls: %s", geminiSent[0])
	}

	// Paused here, on the approval of get_weather.
	dir := t.TempDir()
	_, runner := crashSafe(t, dir)
	p := newFakes(t, []string{"openai_handoff.json"}, []string{"thinking_tool_use.json"}, nil)
	paused, err := runner.Run(ctx, p.agents(t), input, pipeline.WithRunID(resumeRunID), pipeline.WithSessionID("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if !paused.Interrupted() || paused.LastAgent().Name != "weather" {
		t.Fatalf("run not paused on the weather agent's call: interrupted %v, agent %s", paused.Interrupted(), paused.LastAgent().Name)
	}

	got := resumeInChild(t, dir)
	run, err := state.Unmarshal(got.Run)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := run.FinalOutput(); out != straight.FinalOutput() {
		t.Errorf("resumed final output %q, straight %q", out, straight.FinalOutput())
	}
	want, have := straight.State().Items().Slice(), run.Items().Slice()
	if len(have) != len(want) {
		t.Fatalf("resumed run has %d items, straight %d:\n%v\n%v", len(have), len(want), have, want)
	}
	for i := range want {
		if have[i].Kind() != want[i].Kind() || !bytes.Equal(have[i].Raw(), want[i].Raw()) {
			t.Errorf("item %d: resumed %s %s, straight %s %s", i, have[i].Kind(), have[i].Raw(), want[i].Kind(), want[i].Raw())
		}
	}
	if !bytes.Equal(got.Anthropic, f.anthropic.Bodies()[1]) {
		t.Errorf("Anthropic request after the resume:\n%s\nstraight:\n%s", got.Anthropic, f.anthropic.Bodies()[1])
	}
	if !bytes.Equal(got.Gemini, geminiSent[0]) {
		t.Errorf("Gemini request after the resume:\n%s\nstraight:\n%s", got.Gemini, geminiSent[0])
	}
}

// resumeInChild runs TestResumeChild in a fresh process of this test
// binary on the checkpoint in dir and returns what it wrote.
func resumeInChild(t *testing.T, dir string) resumed {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestResumeChild$", "-test.v")
	cmd.Env = append(os.Environ(), resumeDirEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("resuming process: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "resumed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got resumed
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestResumeChild is the fresh process of
// TestThreeProvidersResumedInFreshProcess: it runs only with resumeDirEnv
// set. It approves the pending call of the checkpointed run and resumes it
// with models over fake providers that hold the remaining replies, then
// writes the run and the requests.
func TestResumeChild(t *testing.T) {
	dir := os.Getenv(resumeDirEnv)
	if dir == "" {
		t.Skip("the resuming process of TestThreeProvidersResumedInFreshProcess")
	}
	ctx := context.Background()
	f := newFakes(t, nil, []string{"handoff_forecaster.json"}, []string{"text.json"})
	store, runner := crashSafe(t, dir)
	run, err := store.Load(ctx, resumeRunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range run.Pending() {
		if err := run.Approve(p.CallID); err != nil {
			t.Fatal(err)
		}
	}
	res, err := approval.Resume(ctx, store, runner, f.agents(t), run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	an, ge := f.anthropic.Bodies(), f.gemini.Bodies()
	if len(an) != 1 || len(ge) != 1 || len(f.openai.Bodies()) != 0 {
		t.Fatalf("%d Anthropic, %d Gemini and %d OpenAI requests, want 1, 1 and 0", len(an), len(ge), len(f.openai.Bodies()))
	}
	out, err := json.Marshal(resumed{Run: b, Anthropic: an[0], Gemini: ge[0]})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resumed.json"), out, 0o600); err != nil {
		t.Fatal(err)
	}
}
