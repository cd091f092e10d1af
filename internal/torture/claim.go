package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A ClaimReport says how the processes of [Claim] fared.
type ClaimReport struct {
	// Results holds each process's outcome: "ok", "conflict" or "error: ...".
	Results []string
	// Executions of the approved call, from the effect log.
	Executions int
}

// Claim pauses one run at an approval (a transfer call), then starts
// processes that each load the checkpoint, approve the call and wait;
// when all are ready it tells them at once to resume it with
// [approval.Resume]. Exactly one should proceed and the others fail with
// [state.ErrConflict]; the call should run once.
func Claim(ctx context.Context, b Backend, launch Launcher, processes int, runID string) (*ClaimReport, error) {
	plan := Plan{Runs: []RunSpec{{
		ID: runID, Session: runID + "-s", Input: "Transfer once.", Final: "Transferred.",
		Steps: [][]CallSpec{{{Tool: ToolTransfer}}},
	}}}
	store, err := b.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	log, err := OpenEffectLog(b.EffectLogPath())
	if err != nil {
		return nil, err
	}
	defer log.Close()
	st := NewStack(plan, store, store, log, nil)
	run := state.NewRun(runID, st.Agent.Name)
	runcore.SetSessionID(run, plan.Runs[0].Session)
	if err := st.States.Save(ctx, run); err != nil {
		return nil, err
	}
	res, err := st.Runner.Run(ctx, st.Agent, pipeline.UserInput(plan.Runs[0].Input), pipeline.WithState(run))
	if err != nil {
		return nil, err
	}
	if !res.Interrupted() {
		return nil, errors.New("torture: claim: the run did not pause for approval")
	}

	cfg := childConfig{Mode: modeClaim, Backend: b, RunID: runID, Plan: &plan}
	children := make([]*child, processes)
	defer func() {
		for _, c := range children {
			if c != nil {
				c.Kill()
			}
		}
	}()
	for i := range children {
		if children[i], err = startChild(launch, cfg); err != nil {
			return nil, err
		}
	}
	for _, c := range children { // every process loaded and approved
		if line, err := readLine(ctx, c); err != nil || line != "ready" {
			return nil, fmt.Errorf("torture: claim: child %d said %q: %v", c.Pid(), line, err)
		}
	}
	for _, c := range children {
		if _, err := io.WriteString(c.Stdin, "go\n"); err != nil {
			return nil, err
		}
	}
	rep := &ClaimReport{}
	for _, c := range children {
		line, err := readLine(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("torture: claim: child %d: %w", c.Pid(), err)
		}
		rep.Results = append(rep.Results, strings.TrimPrefix(line, "result "))
	}
	execs, _, err := ReadEffectLog(b.EffectLogPath())
	if err != nil {
		return nil, err
	}
	for _, e := range execs {
		if e.Run == runID {
			rep.Executions++
		}
	}
	return rep, nil
}

func readLine(ctx context.Context, c *child) (string, error) {
	select {
	case line, ok := <-c.Lines:
		if !ok {
			return "", c.Failure("child")
		}
		return line, nil
	case <-time.After(time.Minute):
		return "", errTimeout
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
