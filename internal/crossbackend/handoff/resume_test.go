package handoff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/providerfake"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorded is where the providers' recorded payloads are: model/anthropic's
// testdata, which its own handoff test serves too.
var recorded = filepath.Join("..", "..", "..", "model", "anthropic", "testdata")

// openaiFake answers Responses API requests with recorded payloads in
// order and records the request bodies.
func openaiFake(t *testing.T, files ...string) (openaisdk.Client, func() [][]byte) {
	t.Helper()
	srv := providerfake.New(t, recorded, files...)
	client := openaisdk.NewClient(openaiopt.WithBaseURL(srv.URL+"/v1/"), openaiopt.WithAPIKey("sk-test"),
		openaiopt.WithHTTPClient(srv.Client()), openaiopt.WithMaxRetries(0))
	return client, srv.Bodies
}

// anthropicFake answers Messages API requests with recorded payloads in
// order and records the request bodies.
func anthropicFake(t *testing.T, files ...string) (anthropicsdk.Client, func() [][]byte) {
	t.Helper()
	srv := providerfake.Messages(t, recorded, files...)
	client := anthropicsdk.NewClient(anthropicopt.WithBaseURL(srv.URL), anthropicopt.WithAPIKey("sk-ant-test"),
		anthropicopt.WithHTTPClient(srv.Client()), anthropicopt.WithMaxRetries(0))
	return client, srv.Bodies
}

// weatherAgent is an agent on m with a get_weather tool.
func weatherAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{
		Name:  "weather",
		Model: m,
		Tools: []pipeline.Tool{pipeline.NewTool(pipeline.ToolSpec{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			func(ctx context.Context, args json.RawMessage) (string, error) { return "sunny, 22C", nil })},
	}
}

// resumeDirEnv, when set, makes TestResumeChild the fresh process that
// resumes the paused run from the SQLite checkpoint in that directory.
const resumeDirEnv = "TURNKIT_HANDOFF_RESUME_DIR"

const resumeRunID = "run-xprovider"

// handoffAgents returns the cross-provider pair of model/anthropic's
// TestHandoffAcrossProviders over the given models: triage on OpenAI's Responses API, weather on
// Anthropic with thinking, each handing off to the other.
func handoffAgents(oa *openai.Model, an *anthropic.Model) *pipeline.Agent {
	triage := &pipeline.Agent{Name: "triage", Model: oa}
	weather := weatherAgent(an)
	triage.Handoffs = []pipeline.Handoff{{Agent: weather}}
	weather.Handoffs = []pipeline.Handoff{{Agent: triage}}
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

// TestHandoffResumedInFreshProcess: the cross-provider run (OpenAI hands
// off to Anthropic and back) pauses on the approval of Anthropic's tool
// call; a separate process (this test binary again) loads the SQLite
// checkpoint, approves and resumes with models of its own, and finishes
// with the items, byte for byte, and the model requests of a run that
// went straight through.
func TestHandoffResumedInFreshProcess(t *testing.T) {
	ctx := context.Background()
	input := pipeline.UserInput("What is the weather in Paris?")

	// Straight through, no approval asked.
	oa, oaSent := openaiFake(t, "openai_handoff.json", "openai_final.json")
	an, anSent := anthropicFake(t, "thinking_tool_use.json", "handoff_back.json")
	straight, err := pipeline.NewRunner().Run(ctx, handoffAgents(openai.New(oa, openai.WithModel("gpt-5-mini")),
		anthropic.New(an, anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048))), input)
	if err != nil {
		t.Fatal(err)
	}

	// Paused here, on the approval of get_weather.
	dir := t.TempDir()
	oa2, _ := openaiFake(t, "openai_handoff.json")
	an2, _ := anthropicFake(t, "thinking_tool_use.json")
	_, runner := crashSafe(t, dir)
	paused, err := runner.Run(ctx, handoffAgents(openai.New(oa2, openai.WithModel("gpt-5-mini")),
		anthropic.New(an2, anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048))),
		input, pipeline.WithRunID(resumeRunID), pipeline.WithSessionID("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if !paused.Interrupted() || paused.LastAgent().Name != "weather" {
		t.Fatalf("run not paused on the weather agent's call: interrupted %v, agent %s", paused.Interrupted(), paused.LastAgent().Name)
	}

	// Resumed by a fresh process.
	cmd := exec.Command(os.Args[0], "-test.run=^TestResumeChild$", "-test.v")
	cmd.Env = append(os.Environ(), resumeDirEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("resuming process: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "resumed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Run       json.RawMessage
		Anthropic []byte
		OpenAI    []byte
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	resumed, err := state.Unmarshal(got.Run)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := resumed.FinalOutput(); out != straight.FinalOutput() {
		t.Errorf("resumed final output %q, straight %q", out, straight.FinalOutput())
	}
	want, have := straight.State().Items().Slice(), resumed.Items().Slice()
	if len(have) != len(want) {
		t.Fatalf("resumed run has %d items, straight %d:\n%v\n%v", len(have), len(want), have, want)
	}
	for i := range want {
		if have[i].Kind() != want[i].Kind() || !bytes.Equal(have[i].Raw(), want[i].Raw()) {
			t.Errorf("item %d: resumed %s %s, straight %s %s", i, have[i].Kind(), have[i].Raw(), want[i].Kind(), want[i].Raw())
		}
	}
	// The resumed process sent each provider what the straight run sent.
	if !bytes.Equal(got.Anthropic, anSent()[1]) {
		t.Errorf("Anthropic request after the resume:\n%s\nstraight:\n%s", got.Anthropic, anSent()[1])
	}
	if !bytes.Equal(got.OpenAI, oaSent()[1]) {
		t.Errorf("OpenAI request after the resume:\n%s\nstraight:\n%s", got.OpenAI, oaSent()[1])
	}
}

// TestResumeChild is the fresh process of TestHandoffResumedInFreshProcess:
// it runs only with resumeDirEnv set. It approves the pending call of the
// checkpointed run and resumes it with models over fake providers that
// hold the remaining replies, then writes the run and the requests.
func TestResumeChild(t *testing.T) {
	dir := os.Getenv(resumeDirEnv)
	if dir == "" {
		t.Skip("the resuming process of TestHandoffResumedInFreshProcess")
	}
	ctx := context.Background()
	oa, oaSent := openaiFake(t, "openai_final.json")
	an, anSent := anthropicFake(t, "handoff_back.json")
	triage := handoffAgents(openai.New(oa, openai.WithModel("gpt-5-mini")),
		anthropic.New(an, anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048)))
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
	res, err := approval.Resume(ctx, store, runner, triage, run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	if len(anSent()) != 1 || len(oaSent()) != 1 {
		t.Fatalf("%d Anthropic and %d OpenAI requests, want 1 each", len(anSent()), len(oaSent()))
	}
	out, err := json.Marshal(map[string]any{"Run": json.RawMessage(b), "Anthropic": anSent()[0], "OpenAI": oaSent()[0]})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resumed.json"), out, 0o600); err != nil {
		t.Fatal(err)
	}
}
