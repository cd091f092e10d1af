package riverrun_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/turnkit/turnkit/riverrun"
)

// envChild makes the test binary a child process of a multi-process test.
const envChild = "RIVERRUN_TEST_CHILD"

// childConfig is what a test tells a child process.
type childConfig struct {
	Mode    string        `json:"mode"` // "decide" or "worker"
	Backend backend       `json:"backend"`
	RunID   string        `json:"run_id,omitempty"`
	CallID  string        `json:"call_id,omitempty"`
	Worker  *workerConfig `json:"worker,omitempty"`
}

// childMain runs the process as a child if envChild is set, and exits.
func childMain() {
	raw := os.Getenv(envChild)
	if raw == "" {
		return
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch {
	case cfg.Mode == "decide" && cfg.Backend.Name == "postgres":
		err = decideChild(ctx, cfg, openPG)
	case cfg.Mode == "decide":
		err = decideChild(ctx, cfg, openSQLite)
	case cfg.Mode == "worker" && cfg.Backend.Name == "postgres":
		err = workerChild(ctx, cfg, openPG)
	case cfg.Mode == "worker":
		err = workerChild(ctx, cfg, openSQLite)
	default:
		err = fmt.Errorf("unknown mode %q", cfg.Mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// decideChild approves the call with an insert-only River client and
// says "enqueued <job ID>".
func decideChild[TTx any](ctx context.Context, cfg childConfig, open opener[TTx]) error {
	st, err := cfg.Backend.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	db, err := open(ctx, cfg.Backend)
	if err != nil {
		return err
	}
	defer db.close()
	rc, err := river.NewClient(db.driver, riverConfig(cfg.Backend.Schema, nil))
	if err != nil {
		return err
	}
	res, err := riverrun.NewClient(rc, st).Decide(ctx, cfg.RunID, riverrun.Approve(cfg.CallID))
	if err != nil {
		return err
	}
	if res == nil {
		fmt.Println("undecided")
		return nil
	}
	fmt.Printf("enqueued %d\n", res.Job.ID)
	return nil
}

// runChild runs a child to its end and returns its last line of output.
func runChild(t *testing.T, cfg childConfig) string {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %s: %v: %s", cfg.Mode, err, stderr.String())
	}
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		last = sc.Text()
	}
	return last
}
