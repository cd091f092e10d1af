package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

var key = []byte("0123456789abcdef0123456789abcdef")

// setup writes a SQLite file with a session and three signed runs (one
// paused) and returns its path.
func setup(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(path, sqlite.WithCodec([]state.MarshalOption{state.WithSigningKey("k1", key)}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Append(ctx, "support-1", "r_done", []state.Item{
		state.UserMessage("refund my order").WithSeq(1),
		state.ToolCall("fc_1", "call_1", "lookup", `{"order":7}`).WithSeq(2),
		state.ToolOutput("call_1", "lookup", "shipped").WithSeq(3),
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*state.Run{
		statetest.RunWithStatus(t, "r_done", "support-1", state.RunFinished),
		statetest.RunWithStatus(t, "r_paused", "support-1", state.RunPaused),
		statetest.RunWithStatus(t, "r_other", "", state.RunUnfinished),
	} {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func turnkit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestCommands(t *testing.T) {
	db := setup(t)
	k := "k1=" + hex.EncodeToString(key)
	for _, tt := range []struct {
		args []string
		want []string // lines the output holds
	}{
		{[]string{"sessions"}, []string{"support-1"}},
		{[]string{"sessions", "-q", "supp"}, []string{"support-1"}},
		{[]string{"show", "support-1", "-limit", "2"}, []string{"r_done  2    tool_call", "r_done  3    tool_output  lookup  call_1  shipped", "older items: -cursor p1.2"}},
		{[]string{"show", "support-1", "-cursor", "p1.2"}, []string{"r_done  1    user_message", "refund my order"}},
		{[]string{"runs"}, []string{"r_other   unfinished", "r_paused  paused", "r_done    finished"}},
		{[]string{"runs", "-status", "paused"}, []string{"r_paused  paused  1        lister"}},
		{[]string{"runs", "-limit", "1"}, []string{"r_other", "next page: -cursor r3"}},
		{[]string{"pending"}, []string{"r_paused  call_r_paused  refund  {\"amount\":5}  -"}},
		{[]string{"verify", "r_paused", "-key", k}, []string{"run r_paused: signature verified"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := turnkit(t, append([]string{"-db", db}, tt.args...)...)
			if err != nil {
				t.Fatalf("turnkit %q = %v:\n%s", tt.args, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("turnkit %q: output lacks %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
}

func TestDecisions(t *testing.T) {
	db := setup(t)
	// Without -write nothing changes.
	if out, err := turnkit(t, "-db", db, "approve", "r_paused", "call_r_paused"); err == nil || !strings.Contains(err.Error(), "give -write") {
		t.Fatalf("approve without -write = %v:\n%s", err, out)
	}
	if out, _ := turnkit(t, "-db", db, "pending"); !strings.Contains(out, "call_r_paused  refund  {\"amount\":5}  -") {
		t.Fatalf("pending after a refused approve:\n%s", out)
	}
	k := "k1=" + hex.EncodeToString(key)
	out, err := turnkit(t, "-db", db, "-write", "-sign", k, "reject", "r_paused", "call_r_paused", "-reason", "over the limit")
	if err != nil {
		t.Fatalf("reject = %v:\n%s", err, out)
	}
	// Saved signed, with the key given.
	if out, err := turnkit(t, "-db", db, "verify", "r_paused", "-key", k); err != nil {
		t.Fatalf("verify after the decision = %v:\n%s", err, out)
	}
	s, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run, err := s.Load(t.Context(), "r_paused")
	if err != nil {
		t.Fatal(err)
	}
	d, exact, ok := run.DecisionFor("refund", "call_r_paused")
	if !ok || !exact || d.Verdict != state.Rejected || d.Message != "over the limit" {
		t.Fatalf("stored decision = %+v (exact %v, ok %v), want a rejection with the reason", d, exact, ok)
	}
	// A second decision on the call is refused.
	if _, err := turnkit(t, "-db", db, "-write", "approve", "r_paused", "call_r_paused"); !errors.Is(err, state.ErrAlreadyDecided) {
		t.Fatalf("second decision = %v, want ErrAlreadyDecided", err)
	}
}

func TestVerifyFile(t *testing.T) {
	dir := t.TempDir()
	run := statetest.RunWithStatus(t, "r1", "", state.RunPaused)
	data, err := state.Marshal(run, state.WithSigningKey("k1", key))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r1.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := turnkit(t, "verify", path, "-key", "k1="+hex.EncodeToString(key)); err != nil || !strings.Contains(out, "signature verified") {
		t.Fatalf("verify (right key) = %v:\n%s", err, out)
	}
	_, err = turnkit(t, "verify", path, "-key", "k1="+hex.EncodeToString([]byte("some other key of 32 bytes......")))
	if !errors.Is(err, state.ErrTampered) {
		t.Fatalf("verify (other key) = %v, want ErrTampered", err)
	}
	if _, err := turnkit(t, "verify", path); !errors.Is(err, errUsage) {
		t.Fatalf("verify without a key = %v, want a usage error", err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-db", "x.db", "frobnicate"},
		{"-db", "x.db", "show"},
		{"-db", "x.db", "-write", "serve"},
	} {
		if _, err := turnkit(t, args...); !errors.Is(err, errUsage) {
			t.Errorf("turnkit %q = %v, want a usage error", args, err)
		}
	}
}

// TestPendingElicitation: pending lists a call that waits for an answer
// to its MCP server's request with the request, and the answer once
// given.
func TestPendingElicitation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	run := statetest.ElicitingRun(t, "r_elicit")
	if err := s.Save(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := turnkit(t, "-db", path, "pending")
	if err != nil {
		t.Fatalf("pending = %v:\n%s", err, out)
	}
	for _, want := range []string{
		`r_elicit  call_book  book  {"when":"tonight"} · diner asks "Any allergies?"  -`,
		`r_elicit  call_pay   pay   {"eur":40} `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pending lacks %q:\n%s", want, out)
		}
	}
}
