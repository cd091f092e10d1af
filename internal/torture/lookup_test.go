package torture_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/torture"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state/memstore"
)

// TestCheckLostLookup checks that Check allows a lost response's lookup,
// which ran again under a new call ID, exactly as far as the checkpoint's
// contract for retryable calls goes: only if every execution of it was by
// a process that was killed, and never for a call with a side effect.
func TestCheckLostLookup(t *testing.T) {
	ctx := context.Background()
	spec := torture.RunSpec{
		ID: "lookup", Session: "lookup-s", Input: "Look it up.", Final: "Looked up.",
		Steps: [][]torture.CallSpec{{{Tool: torture.ToolLookup}, {Tool: torture.ToolEffect}}, {{Tool: torture.ToolLookup}}},
	}
	plan := torture.Plan{Runs: []torture.RunSpec{spec}}
	logPath := filepath.Join(t.TempDir(), "effects.log")
	log, err := torture.OpenEffectLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	sessions, states := memory.New(), memstore.New()
	w := &torture.Worker{Stack: torture.NewStack(plan, sessions, states, log, nil), Plan: plan}
	if err := w.Drive(ctx); err != nil {
		t.Fatal(err)
	}
	execs, _, err := torture.ReadEffectLog(logPath)
	if err != nil {
		t.Fatal(err)
	}

	const pid = 1 << 30 // no process of this test
	lost := func(tool string, step, index int) torture.Execution {
		return torture.Execution{Key: spec.ID + "/call_lost", Exec: "lost-1", Tool: tool, Run: spec.ID, Step: step, Index: index, PID: pid}
	}
	for _, tc := range []struct {
		name   string
		extra  []torture.Execution
		killed bool
		want   string // a violation that must be found; "" for none
		lost   int
	}{
		{name: "none"},
		{name: "lookup alone, killed", extra: []torture.Execution{lost(torture.ToolLookup, 2, 0)}, killed: true, lost: 1},
		{name: "lookup mixed, killed", extra: []torture.Execution{lost(torture.ToolLookup, 1, 0)}, killed: true, lost: 1},
		{name: "lookup, not killed", extra: []torture.Execution{lost(torture.ToolLookup, 2, 0)}, want: "was not committed and that process was not killed"},
		{name: "effect, killed", extra: []torture.Execution{lost(torture.ToolEffect, 1, 1)}, killed: true, want: "ran under 2 idempotency keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			killed := map[int]bool{pid: tc.killed}
			res, err := torture.Check(ctx, sessions, states, plan, append(execs[:len(execs):len(execs)], tc.extra...), killed, true)
			if err != nil {
				t.Fatal(err)
			}
			if res.LostRetryable != tc.lost {
				t.Errorf("LostRetryable = %d, want %d", res.LostRetryable, tc.lost)
			}
			found := false
			for _, v := range res.Violations {
				if tc.want != "" && strings.Contains(v, tc.want) {
					found = true
					continue
				}
				if tc.want == "" {
					t.Error(v)
				}
			}
			if tc.want != "" && !found {
				t.Errorf("violations %q, want one with %q", res.Violations, tc.want)
			}
		})
	}
}
