package compaction_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// process is what one process builds: a store on the SQLite file at path,
// and a runner over it that records the agent model's inputs.
type process struct {
	store  *sqlite.Store
	runner *pipeline.Runner
	inputs []string // the raw JSON of every model input, in order
}

func openProcess(t *testing.T, path string) *process {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p := &process{store: s}
	n := 0
	summarizer := scripted.Generate(func(int) scripted.Step {
		n++
		return scripted.Reply(fmt.Sprintf("summary %d", n))
	})
	probe := pipeline.Middleware{Name: "probe", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			var b strings.Builder
			for _, it := range c.Input.All() {
				b.Write(it.Raw())
				b.WriteByte('\n')
			}
			p.inputs = append(p.inputs, b.String())
			return next.Respond(ctx, c)
		})
	}}
	p.runner = pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(s, persistence.WithContinuation(), persistence.WithHistoryByReference()),
		compaction.Middleware(compaction.Summarize(summarizer), compaction.WithMaxItems(6), compaction.WithKeep(2)),
		approval.Require(approval.ByTool("transfer")),
		probe,
	))
	return p
}

var transfer = pipeline.NewTool(pipeline.ToolSpec{Name: "transfer"}, func(ctx context.Context, args json.RawMessage) (string, error) {
	return "sent", nil
})

func transferAgent(steps ...scripted.Step) *pipeline.Agent {
	return &pipeline.Agent{Name: "a", Model: scripted.New(steps...), Tools: []pipeline.Tool{transfer}}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResumeAcrossCompaction: a run that compacted its view and paused on
// an approval resumes in another process (a fresh store on the same data,
// the checkpoint loaded by reference, or a marshaled state) with exactly
// the model input the live state resumes with.
func TestResumeAcrossCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	ctx := context.Background()

	a := openProcess(t, path)
	for i := range 5 {
		agent := transferAgent(scripted.Reply(fmt.Sprintf("re %d", i)))
		if _, err := a.runner.Run(ctx, agent, pipeline.UserInput(fmt.Sprintf("m %d", i)),
			pipeline.WithSessionID("s"), pipeline.WithRunID(fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.runner.Run(ctx, transferAgent(scripted.CallTool("transfer", `{"amount":5}`)), pipeline.UserInput("send 5"),
		pipeline.WithSessionID("s"), pipeline.WithRunID("pay"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() {
		t.Fatal("the transfer did not pause")
	}
	paused := a.inputs[len(a.inputs)-1]
	live := res.State()
	if v, ok, err := pipeline.ViewOf(live); err != nil || !ok || !strings.HasPrefix(v.ID, "pay/") {
		t.Fatalf("the paused run's view = %+v, %v, %v: the test needs a compaction in the paused run\n%s", v, ok, err, paused)
	}
	callID := res.Interruptions()[0].CallID
	if err := a.store.Save(ctx, live.Clone()); err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	// Other processes start from copies of the data as it is now (the
	// database and its write-ahead log); the live process goes on.
	for _, name := range []string{"stored.db", "marshaled.db"} {
		for _, suffix := range []string{"", "-wal"} {
			if _, err := os.Stat(path + suffix); err == nil {
				copyFile(t, path+suffix, filepath.Join(dir, name)+suffix)
			}
		}
	}

	resume := func(p *process, run *state.Run) string {
		t.Helper()
		if err := run.Approve(callID); err != nil {
			t.Fatal(err)
		}
		res, err := p.runner.Resume(ctx, transferAgent(scripted.Reply("done")), run)
		if err != nil {
			t.Fatal(err)
		}
		if res.FinalOutput() != "done" {
			t.Fatalf("resumed run's output %q, want done", res.FinalOutput())
		}
		return p.inputs[len(p.inputs)-1]
	}
	want := resume(a, live)

	b := openProcess(t, filepath.Join(dir, "stored.db"))
	stored, err := b.store.Load(ctx, "pay")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, resume(b, stored)); diff != "" {
		t.Errorf("resumed from the stored checkpoint: model input differs from the live state's (-live +stored):\n%s", diff)
	}

	c := openProcess(t, filepath.Join(dir, "marshaled.db"))
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, resume(c, run)); diff != "" {
		t.Errorf("resumed from the marshaled state: model input differs from the live state's (-live +marshaled):\n%s", diff)
	}
	if !strings.HasPrefix(want, paused[:strings.Index(paused, "\n")]) {
		t.Errorf("the resumed call does not start from the paused call's summary:\nresumed %s\npaused %s", want, paused)
	}
}
