package torture_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/torture"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/state/statetest"
)

var signingKey = []byte("hostile-test-key-0123456789abcdef")

// paused is a run paused at an approved transfer call, after an effect
// call of the same response ran and committed.
type paused struct {
	stack   *torture.Stack
	session *memory.Store
	logPath string
	run     *state.Run
}

func newPaused(t *testing.T) *paused {
	t.Helper()
	ctx := context.Background()
	spec := torture.RunSpec{
		ID: "hostile", Session: "hostile-s", Input: "Move the money.", Final: "Moved.",
		Steps: [][]torture.CallSpec{{{Tool: torture.ToolEffect}, {Tool: torture.ToolTransfer}}},
	}
	logPath := filepath.Join(t.TempDir(), "effects.log")
	log, err := torture.OpenEffectLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	sess := memory.New()
	st := torture.NewStack(torture.Plan{Runs: []torture.RunSpec{spec}}, sess, memstore.New(), log, nil)
	run := state.NewRun(spec.ID, st.Agent.Name)
	runcore.SetSessionID(run, spec.Session)
	res, err := st.Runner.Run(ctx, st.Agent, pipelineInput(spec), withState(run))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interruptions()) != 1 {
		t.Fatalf("interruptions = %v, want the transfer call", res.Interruptions())
	}
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	return &paused{stack: st, session: sess, logPath: logPath, run: run}
}

// edit decodes a checkpoint, lets f change it, and encodes it again.
func edit(t *testing.T, data []byte, f func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runDoc(doc map[string]any) map[string]any { return doc["run"].(map[string]any) }

// itemOf returns the run's item whose raw JSON has the given type and
// field value.
func itemOf(doc map[string]any, field, value string) map[string]any {
	for _, x := range runDoc(doc)["items"].([]any) {
		it := x.(map[string]any)
		if raw, ok := it["raw"].(map[string]any); ok && raw[field] == value {
			return it
		}
	}
	panic("no item with " + field + " " + value)
}

// TestHostileCheckpoints feeds checkpoints edited by an attacker (or a
// bug) to Unmarshal and Resume: each is refused with a typed error, no
// tool runs, and neither the run nor the session changes.
func TestHostileCheckpoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		signed  bool
		edit    func(t *testing.T, p *paused, data []byte) []byte
		wantErr error
	}{
		{
			name: "arguments edited consistently after approval",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					args := `{"run":"hostile","step":1,"index":1,"amount":1000000}`
					itemOf(doc, "name", torture.ToolTransfer)["raw"].(map[string]any)["arguments"] = args
					runDoc(doc)["pending"].([]any)[0].(map[string]any)["arguments"] = args
				})
			},
			wantErr: state.ErrArgumentsChanged,
		},
		{
			name:   "arguments edited in a signed checkpoint",
			signed: true,
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					args := `{"run":"hostile","step":1,"index":1,"amount":1000000}`
					itemOf(doc, "name", torture.ToolTransfer)["raw"].(map[string]any)["arguments"] = args
					runDoc(doc)["pending"].([]any)[0].(map[string]any)["arguments"] = args
				})
			},
			wantErr: state.ErrTampered,
		},
		{
			name: "decision forged for a call that was never pending",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					r := runDoc(doc)
					r["decisions"] = append(r["decisions"].([]any), map[string]any{
						"tool": torture.ToolTransfer, "call_id": "call_forged", "verdict": "approved",
						"fingerprint": state.Fingerprint(torture.ToolTransfer, "{}"),
					})
				})
			},
			wantErr: state.ErrInvalid,
		},
		{
			name: "pending approval injected for a call that does not exist",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					r := runDoc(doc)
					r["pending"] = append(r["pending"].([]any), map[string]any{
						"tool": torture.ToolTransfer, "call_id": "call_ghost", "arguments": "{}", "agent": "torture",
						"seq": 3, "output_seq": 6,
					})
				})
			},
			wantErr: state.ErrInvalid,
		},
		{
			name: "call IDs of two calls swapped",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					a := itemOf(doc, "name", torture.ToolEffect)["raw"].(map[string]any)
					b := itemOf(doc, "name", torture.ToolTransfer)["raw"].(map[string]any)
					a["call_id"], b["call_id"] = b["call_id"], a["call_id"]
				})
			},
			wantErr: state.ErrInvalid,
		},
		{
			name: "duplicated Seq",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					items := runDoc(doc)["items"].([]any)
					items[2].(map[string]any)["seq"] = items[1].(map[string]any)["seq"]
				})
			},
			wantErr: state.ErrInvalid,
		},
		{
			name: "huge payload",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) {
					r := runDoc(doc)
					r["extension"] = map[string]any{"padding": strings.Repeat("x", state.DefaultMaxSize)}
				})
			},
			wantErr: state.ErrTooLarge,
		},
		{
			name: "future schema version",
			edit: func(t *testing.T, p *paused, data []byte) []byte {
				return edit(t, data, func(doc map[string]any) { doc["version"] = state.SchemaVersion + 1 })
			},
			wantErr: state.ErrVersion,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newPaused(t)
			var (
				mopts []state.MarshalOption
				uopts []state.UnmarshalOption
			)
			if tt.signed {
				mopts = append(mopts, state.WithSigningKey("k1", signingKey))
				uopts = append(uopts, state.WithVerifyKeys(map[string][]byte{"k1": signingKey}))
			}
			data, err := state.Marshal(p.run, mopts...)
			if err != nil {
				t.Fatal(err)
			}
			execsBefore := executions(t, p.logPath)
			sessionBefore, err := p.session.List(ctx, "hostile-s", 0)
			if err != nil {
				t.Fatal(err)
			}

			run, err := state.Unmarshal(tt.edit(t, p, data), uopts...)
			if err == nil {
				before := run.Clone()
				_, err = p.stack.Runner.Resume(ctx, p.stack.Agent, run)
				if diff := statetest.Diff(t, run, before); diff != "" {
					t.Errorf("the refused resume changed the run:\n%s", diff)
				}
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !typed(err) {
				t.Errorf("error %T (%v) is not one of state's typed errors", err, err)
			}
			if got := executions(t, p.logPath); got != execsBefore {
				t.Errorf("tool executions: %d after, %d before: a tool ran", got, execsBefore)
			}
			sessionAfter, err := p.session.List(ctx, "hostile-s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(seqs(sessionBefore), seqs(sessionAfter)); diff != "" {
				t.Errorf("session changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestForgedDecisions: decisions made through the API on calls that are
// not pending, or twice, fail with typed errors and record nothing.
func TestForgedDecisions(t *testing.T) {
	t.Parallel()
	p := newPaused(t)
	callID := p.run.Decisions()[0].CallID
	tests := []struct {
		name    string
		decide  func(r *state.Run) error
		wantErr error
	}{
		{"approve a call never pending", func(r *state.Run) error { return r.Approve("call_forged") }, state.ErrUnknownCall},
		{"reject a call never pending", func(r *state.Run) error { return r.Reject("call_forged", "no") }, state.ErrUnknownCall},
		{"decide an approved call again", func(r *state.Run) error { return r.Reject(callID, "changed my mind") }, state.ErrAlreadyDecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := p.run.Clone()
			before := r.Decisions()
			err := tt.decide(r)
			if _, ok := errors.AsType[*state.DecisionError](err); !ok || !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want a *state.DecisionError wrapping %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(before, r.Decisions()); diff != "" {
				t.Errorf("decisions changed (-before +after):\n%s", diff)
			}
		})
	}
}

func typed(err error) bool {
	var (
		de *state.DecodeError
		ve *state.VersionError
		se *state.SignatureError
		fe *state.FingerprintError
	)
	return errors.As(err, &de) || errors.As(err, &ve) || errors.As(err, &se) || errors.As(err, &fe)
}

func executions(t *testing.T, path string) int {
	t.Helper()
	execs, _, err := torture.ReadEffectLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(execs)
}

func seqs(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.String()
	}
	return out
}
