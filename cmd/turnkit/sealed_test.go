package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// sealedSetup runs an agent on a SQLite file sealed with session/encrypt
// under a key file: run "r_refund" asks for a refund, the model calls the
// refund tool (with usage the test can find), and the run pauses for its
// approval. It returns the file and the key directory.
func sealedSetup(t *testing.T) (db, keys string) {
	t.Helper()
	keys, db = t.TempDir(), filepath.Join(t.TempDir(), "sealed.db")
	if err := encrypt.WriteKeyFile(keys, "kek1"); err != nil {
		t.Fatal(err)
	}
	p, err := encrypt.NewFileProvider(keys, "kek1")
	if err != nil {
		t.Fatal(err)
	}
	kr := encrypt.NewKeyring(p)
	b, err := sqlite.Open(db, sqlite.WithCodec(kr.Codec()))
	if err != nil {
		t.Fatal(err)
	}
	store := encrypt.Wrap(b, kr)
	defer store.Close()
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware(), approval.Require(approval.ByTool("refund"))))
	refund := pipeline.NewTool(pipeline.ToolSpec{Name: "refund"}, func(_ context.Context, _ json.RawMessage) (string, error) { return "refunded", nil })
	agent := &pipeline.Agent{Name: "support", Tools: []pipeline.Tool{refund}, Model: scripted.Rules(scripted.On(nil,
		scripted.CallTool("refund", `{"order":"SECRET-ORDER-9"}`).WithUsage(state.Usage{Requests: 1, InputTokens: 1234, CachedTokens: 200, OutputTokens: 56, ReasoningTokens: 7}),
	))}
	res, err := runner.Run(t.Context(), agent, pipeline.UserInput("refund SECRET-ORDER-9"), pipeline.WithRunID("r_refund"), pipeline.WithSessionID("sealed-1"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, %v; want a pause for the refund's approval", res, err)
	}
	return db, keys
}

// TestSealedStore: with -keys every command reads the sealed session and
// checkpoint (and approve writes the checkpoint sealed); without it the
// content stays unreadable.
func TestSealedStore(t *testing.T) {
	db, keys := sealedSetup(t)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"show", "sealed-1"}, []string{"r_refund 1 user_message refund SECRET-ORDER-9"}},
		{[]string{"pending"}, []string{`r_refund call_r_refund_1_1 refund {"order":"SECRET-ORDER-9"} -`}},
		{[]string{"run", "r_refund"}, []string{
			`run r_refund: paused, agent support, turn 1, session "sealed-1"`,
			"TURN AGENT MODEL RESPONSE REQUESTS INPUT CACHED OUTPUT REASONING",
			"1 support - resp_r_refund_1 1 1234 200 56 7",
		}},
	} {
		out, err := turnkit(t, append([]string{"-db", db, "-keys", keys}, tt.args...)...)
		if err != nil {
			t.Fatalf("turnkit -keys %q = %v:\n%s", tt.args, err, out)
		}
		words := strings.Join(strings.Fields(out), " ") // columns' widths aside
		for _, w := range tt.want {
			if !strings.Contains(words, w) {
				t.Errorf("turnkit -keys %q: output lacks %q:\n%s", tt.args, w, out)
			}
		}
		// Without the keys, the content is not shown.
		if out, _ := turnkit(t, append([]string{"-db", db}, tt.args...)...); strings.Contains(out, "SECRET-ORDER-9") {
			t.Errorf("turnkit %q without -keys shows the sealed content:\n%s", tt.args, out)
		}
	}
	if out, err := turnkit(t, "-db", db, "-keys", keys, "-write", "approve", "r_refund", "call_r_refund_1_1"); err != nil {
		t.Fatalf("approve = %v:\n%s", err, out)
	}
	if out, _ := turnkit(t, "-db", db, "-keys", keys, "pending"); !strings.Contains(out, "call_r_refund_1_1  refund  {\"order\":\"SECRET-ORDER-9\"}  approved") {
		t.Errorf("pending after approve:\n%s", out)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "SECRET-ORDER-9") {
		t.Error("the database file holds the content in the clear")
	}
}

// TestKeysFlag: -kek is needed when the directory holds several keys,
// and a wrong key directory is an error, not garbage.
func TestKeysFlag(t *testing.T) {
	db, keys := sealedSetup(t)
	if err := encrypt.WriteKeyFile(keys, "kek2"); err != nil {
		t.Fatal(err)
	}
	if _, err := turnkit(t, "-db", db, "-keys", keys, "pending"); !errors.Is(err, errUsage) {
		t.Errorf("two keys without -kek = %v, want a usage error", err)
	}
	if out, err := turnkit(t, "-db", db, "-keys", keys, "-kek", "kek2", "pending"); err != nil || !strings.Contains(out, "SECRET-ORDER-9") {
		t.Errorf("-kek kek2 = %v:\n%s; want the old key to still unwrap", err, out)
	}
	other := t.TempDir()
	if err := encrypt.WriteKeyFile(other, "kek1"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TURNKIT_KEYS", other)
	if _, err := turnkit(t, "-db", db, "show", "sealed-1"); !errors.Is(err, encrypt.ErrWrongKey) && !errors.Is(err, encrypt.ErrTampered) {
		t.Errorf("another key from $TURNKIT_KEYS = %v, want a typed key error", err)
	}
}
