// Command approval pauses a run for a human decision, saves the checkpoint
// to a file and exits; a second invocation, a new process, loads the
// checkpoint, records the decision and finishes the run.
//
//	go run ./examples/approval                       # runs until the pause, prints the pending call
//	go run ./examples/approval -approve              # approves it and finishes
//	go run ./examples/approval -reject "not today"   # or rejects it with a message
//
// Checkpoints live in a file store (package state/filestore; -dir, default
// a directory under the system temp dir), a JSON file per run, signed with -key so that an
// edited checkpoint is refused. The resume goes through
// approval.Resume, which claims the checkpoint with compare-and-swap, so
// two operators approving at once cannot both run the tool.
//
// It runs offline on a small deterministic model that reads the history
// it is given; with OPENAI_API_KEY set it talks to OpenAI instead.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/filestore"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(w)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "turnkit-approval"), "directory of the checkpoint files")
	runID := fs.String("run", "cleanup-1", "run ID (the checkpoint's file name)")
	approve := fs.Bool("approve", false, "approve the pending call and finish the run")
	reject := fs.String("reject", "", "reject the pending call with this message and finish the run")
	key := fs.String("key", "example signing key; use a secret", "HMAC key that signs checkpoints")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *approve && *reject != "" {
		return errors.New("give -approve or -reject, not both")
	}
	k := []byte(*key)
	store, err := filestore.New(*dir, filestore.WithCodec(
		[]state.MarshalOption{state.WithSigningKey("k1", k), state.WithIndent()},
		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": k})},
	))
	if err != nil {
		return err
	}
	agent := newAgent()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("delete_files"))))

	if !*approve && *reject == "" {
		return start(ctx, w, store, runner, agent, *runID)
	}
	cp, err := store.Load(ctx, *runID)
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("no checkpoint for run %q in %s: run without -approve/-reject first", *runID, *dir)
	}
	if err != nil {
		return err
	}
	pending := cp.Pending()
	if len(pending) == 0 {
		return fmt.Errorf("run %q waits for no decision", *runID)
	}
	for _, p := range pending {
		if *approve {
			err = cp.Approve(p.CallID)
		} else {
			err = cp.Reject(p.CallID, *reject)
		}
		if err != nil {
			return err
		}
	}
	res, err := approval.Resume(ctx, store, runner, agent, cp)
	if err != nil {
		return err
	}
	for _, it := range res.NewItems() {
		fmt.Fprintf(w, "%3d %-17s %s\n", it.Seq(), it.Kind(), it.Text())
	}
	if res.Interrupted() {
		fmt.Fprintf(w, "still waiting for %d decision(s)\n", len(res.Interruptions()))
		return nil
	}
	fmt.Fprintln(w, "final output:", res.FinalOutput())
	return store.Delete(ctx, *runID)
}

// start runs until the pause and saves the checkpoint.
func start(ctx context.Context, w io.Writer, store state.Store, runner *pipeline.Runner, agent *pipeline.Agent, runID string) error {
	if err := store.Delete(ctx, runID); err != nil { // a fresh start replaces an old checkpoint
		return err
	}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("Free some disk space in /tmp."), pipeline.WithRunID(runID))
	if err != nil {
		return err
	}
	if !res.Interrupted() {
		fmt.Fprintln(w, "final output:", res.FinalOutput())
		return nil
	}
	if err := store.Save(ctx, res.State()); err != nil {
		return err
	}
	for _, p := range res.Interruptions() {
		fmt.Fprintf(w, "waiting for approval: %s %s (call %s)\n", p.Tool, p.Arguments, p.CallID)
	}
	fmt.Fprintln(w, "checkpoint saved; run again with -approve or -reject \"reason\"")
	return nil
}

func newAgent() *pipeline.Agent {
	// OpenAI when OPENAI_API_KEY is set (model from OPENAI_MODEL), else offline.
	model := exmodel.Or(pipeline.ModelFunc(offlineModel))
	del := pipeline.NewTool(pipeline.ToolSpec{
		Name:        "delete_files",
		Description: "Deletes the files matching a glob pattern.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"],"additionalProperties":false}`),
		Strict:      true,
	}, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Pattern string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return "deleted 3 files matching " + in.Pattern + " (simulated)", nil
	})
	return &pipeline.Agent{
		Name:         "janitor",
		Instructions: "You free disk space. Use delete_files; a human approves each deletion.",
		Model:        model,
		Tools:        []pipeline.Tool{del},
	}
}

// offlineModel stands in for a real model: it reads the history it is
// given, so a new process continues where the last one paused.
func offlineModel(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	last := c.Input.At(c.Input.Len() - 1)
	if last.Kind() != state.KindToolOutput {
		return &pipeline.ModelResponse{Items: []state.Item{
			state.Reasoning("rs_1", "Old build caches are safe to remove."),
			state.ToolCall("fc_1", "call_delete_1", "delete_files", `{"pattern":"/tmp/build-cache-*"}`),
		}}, nil
	}
	text := "Done: " + last.Text() + "."
	if !strings.HasPrefix(last.Text(), "deleted") {
		text = "I did not delete anything: " + last.Text()
	}
	return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_1", text)}}, nil
}
