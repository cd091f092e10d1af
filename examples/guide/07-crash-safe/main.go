// Command 07-crash-safe is the guide's crash step (docs/guide.md): a
// worker process is killed while a tool runs, and another process resumes
// the run from its checkpoint. The tool runs again under the same call ID,
// so under the same idempotency key, and the payment service it calls
// charges once.
//
//	go run ./examples/guide/07-crash-safe
//
// The program starts itself as a child process (the worker), which is
// killed with SIGKILL inside the tool, after the payment service recorded
// the charge and before the tool returned; the parent then resumes the run
// by ID with checkpoint.Checkpointer.Resume. Sessions and checkpoints are
// in one SQLite file, behind a wrapper that counts the saves made in one
// transaction with their session append: it forwards SaveAppend, and the
// checkpointer and the session get the same wrapper value.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// crashEnv, when set to a folder, makes the process the worker that dies.
const crashEnv = "TURNKIT_GUIDE_CRASH_DIR"

const runID = "order-17"

func main() {
	if dir := os.Getenv(crashEnv); dir != "" {
		if err := worker(context.Background(), dir); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	dir, err := os.MkdirTemp("", "turnkit-crash-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "07-crash-safe:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err == nil {
		err = crashWorker(exe, dir)
	}
	if err == nil {
		err = recoverRun(context.Background(), os.Stdout, dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "07-crash-safe:", err)
		os.Exit(1)
	}
}

// crashWorker runs exe as the worker in dir and checks that it was killed.
func crashWorker(exe, dir string) error {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ProcessState.Exited() {
		return fmt.Errorf("the worker was to be killed in the tool, got %v", err)
	}
	return nil
}

// metered is the store both stores are: it embeds *sqlite.Store, so it has
// every method of it, and counts the saves made with an append. Embedding
// the pointer type forwards SaveAppend; embedding the session.Store or
// state.Store interface would not, and the checkpointer would then make
// two writes per append.
type metered struct {
	*sqlite.Store
	saveAppends atomic.Int64
}

// SaveAppend counts and forwards to the SQLite store's one transaction.
func (m *metered) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	m.saveAppends.Add(1)
	return m.Store.SaveAppend(ctx, run, sessionID, items)
}

// ChargeArgs are the arguments of the charge tool.
type ChargeArgs struct {
	Cents int `json:"cents"`
}

// newAgent returns the billing agent; charged is called inside the tool
// once the payment service recorded the charge.
func newAgent(dir string, charged func()) *pipeline.Agent {
	charge := tool.Func("charge", "Charges the customer's card.",
		func(ctx context.Context, in ChargeArgs) (string, error) {
			call, _ := tool.CallFromContext(ctx)
			receipt, err := chargeCard(dir, call.IdempotencyKey(), in.Cents)
			if err != nil {
				return "", err
			}
			charged()
			return receipt, nil
		})
	return &pipeline.Agent{
		Name:         "billing",
		Instructions: "You charge customers when asked to. Use the charge tool.",
		// Rules, not a script in call order: the resuming process's model
		// is asked only what the run still needs.
		Model: exmodel.Or(scripted.Rules(
			scripted.On(scripted.AfterOutput(""), scripted.Reply("Charged 12.50 EUR; your receipt is on its way.")),
			scripted.On(scripted.Any(), scripted.CallTool("charge", `{"cents":1250}`)),
		)),
		Settings: exmodel.Settings(),
		Tools:    []pipeline.Tool{charge},
	}
}

// open returns the store and a runner with the crash-safe chain.
func open(dir string) (*metered, *checkpoint.Checkpointer, *pipeline.Runner, error) {
	db, err := sqlite.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		return nil, nil, nil, err
	}
	store := &metered{Store: db}
	cp := checkpoint.New(store, checkpoint.WithSession(store)) // the same value twice: saves and appends share one transaction
	runner := pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Checkpoint: cp.Middleware(), // persistence, with the checkpointer inside it
	}.Middleware()...))
	return store, cp, runner, nil
}

// worker starts the run and is killed inside the tool.
func worker(ctx context.Context, dir string) error {
	store, _, runner, err := open(dir)
	if err != nil {
		return err
	}
	defer store.Close()
	die := func() {
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill() // SIGKILL: no deferred call, no end save
		select {}
	}
	_, err = runner.Run(ctx, newAgent(dir, die), pipeline.UserInput("Please charge me 12.50 EUR."),
		pipeline.WithRunID(runID), pipeline.WithSessionID("customer-9"))
	return err
}

// recoverRun resumes the dead worker's run by ID and reports.
func recoverRun(ctx context.Context, w io.Writer, dir string) error {
	store, cp, runner, err := open(dir)
	if err != nil {
		return err
	}
	defer store.Close()
	before, err := store.Load(ctx, runID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the worker died; the checkpoint holds %d items at version %d\n", before.Len(), before.Version())
	res, err := cp.Resume(ctx, runner, newAgent(dir, func() {}), runID)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "resumed:", res.FinalOutput())
	items, err := store.List(ctx, "customer-9", 0)
	if err != nil {
		return err
	}
	for _, it := range items {
		fmt.Fprintf(w, "  %d %s %s\n", it.Seq(), it.Kind(), it.Text())
	}
	ledger, err := readLedger(dir)
	if err != nil {
		return err
	}
	for key, c := range ledger {
		fmt.Fprintf(w, "payment service: key %s asked %d times, charged once\n", key, c.Asked)
	}
	fmt.Fprintf(w, "saves made in one transaction with their append: %d\n", store.saveAppends.Load())
	return nil
}

// A charge is the payment service's record of one idempotency key.
type charge struct {
	Cents   int    `json:"cents"`
	Receipt string `json:"receipt"`
	Asked   int    `json:"asked"`
}

// chargeCard stands for a payment service that honours idempotency keys:
// a key it saw before returns the first charge's receipt and charges
// nothing. It keeps its ledger in a file in dir.
func chargeCard(dir, key string, cents int) (string, error) {
	ledger, err := readLedger(dir)
	if err != nil {
		return "", err
	}
	c, seen := ledger[key]
	if !seen {
		c = charge{Cents: cents, Receipt: fmt.Sprintf("receipt R-%d", len(ledger)+1)}
	}
	c.Asked++
	ledger[key] = c
	data, err := json.Marshal(ledger)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "ledger.json"), data, 0o600); err != nil {
		return "", err
	}
	return c.Receipt, nil
}

func readLedger(dir string) (map[string]charge, error) {
	ledger := map[string]charge{}
	data, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ledger, nil
	}
	if err != nil {
		return nil, err
	}
	return ledger, json.Unmarshal(data, &ledger)
}
