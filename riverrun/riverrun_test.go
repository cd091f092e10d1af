package riverrun_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/state"
)

func TestRunFinishes(t *testing.T) { forEach(t, testRunFinishes, testRunFinishes, "effect") }

func testRunFinishes[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	start := riverrun.Start{RunID: "r1", Agent: "agent", SessionID: "s1", Text: "hello"}
	res, err := e.runs.Enqueue(ctx, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	out := output(t, j)
	if out.Status != riverrun.StatusFinished || out.FinalOutput != "done" {
		t.Fatalf("output = %+v, want finished with %q", out, "done")
	}
	items, err := e.store.List(ctx, "s1", 0)
	if err != nil || len(items) != 4 {
		t.Fatalf("session holds %d items (%v), want 4: user, call, output, message", len(items), err)
	}
	if got := e.stack.fx.OfRun("r1"); len(got) != 1 || got[0].Tool != "effect" {
		t.Fatalf("the run's executions %v, want effect once", got)
	}
	// The job of a finished run, run again (as a rescued job would be),
	// completes without asking the model again.
	calls := len(e.stack.model.Calls())
	if _, err := e.rc.JobRetry(ctx, res.Job.ID); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	if out := output(t, j); out.Status != riverrun.StatusFinished || out.FinalOutput != "done" || j.Attempt != 2 {
		t.Fatalf("retried job: attempt %d, output %+v", j.Attempt, out)
	}
	if got := len(e.stack.model.Calls()); got != calls {
		t.Fatalf("the model was called %d more times", got-calls)
	}
	// Unique per run ID: a second enqueue is a duplicate.
	again, err := e.runs.Enqueue(ctx, start, nil)
	if err != nil || !again.UniqueSkippedAsDuplicate || again.Job.ID != res.Job.ID {
		t.Fatalf("second Enqueue = %+v, %v; want the first job, skipped as a duplicate", again, err)
	}
	// A resume of a finished run is refused.
	if _, err := e.runs.EnqueueResume(ctx, "r1"); !errors.Is(err, riverrun.ErrFinished) {
		t.Fatalf("EnqueueResume(finished) = %v, want ErrFinished", err)
	}
}

func TestRetries(t *testing.T) { forEach(t, testRetries, testRetries, "effect") }

func testRetries[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	// Retryable: the job retries and the run finishes, its tool run once.
	e.stack.model.FailNext("retry", &pipeline.ModelError{Status: 503, Retryable: true, Err: errors.New("overloaded")},
		&pipeline.ModelError{Status: 429, Retryable: true, Err: errors.New("slow down")})
	res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: "retry", Agent: "agent", SessionID: "s", Text: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	if j.Attempt != 3 || len(j.Errors) != 2 || !strings.Contains(j.Errors[0].Error, "overloaded") {
		t.Fatalf("job attempt %d, errors %v; want attempt 3 after two recorded errors", j.Attempt, j.Errors)
	}
	if out := output(t, j); out.Status != riverrun.StatusFinished {
		t.Fatalf("output = %+v", out)
	}
	if got := e.stack.fx.OfRun("retry"); len(got) != 1 {
		t.Fatalf("the run's executions %v, want effect once", got)
	}

	// Not retryable: the job is cancelled with the error recorded.
	e.stack.model.FailNext("fail", &pipeline.ModelError{Status: 400, Err: errors.New("bad request")})
	res, err = e.runs.Enqueue(ctx, riverrun.Start{RunID: "fail", Agent: "agent", SessionID: "s", Text: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCancelled, rivertype.JobStateCompleted)
	if j.State != rivertype.JobStateCancelled || j.Attempt != 1 || len(j.Errors) != 1 || !strings.Contains(j.Errors[0].Error, "bad request") {
		t.Fatalf("job %s attempt %d errors %v; want cancelled at attempt 1 with the model's error", j.State, j.Attempt, j.Errors)
	}
	if out := output(t, j); out.Status != riverrun.StatusFailed || out.Retry || !strings.Contains(out.Error, "bad request") {
		t.Fatalf("output = %+v, want failed for good", out)
	}
	// An unknown agent fails its job.
	res, err = e.runs.Enqueue(ctx, riverrun.Start{RunID: "nobody", Agent: "nobody", Text: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCancelled, rivertype.JobStateCompleted)
	if j.State != rivertype.JobStateCancelled || !strings.Contains(j.Errors[0].Error, riverrun.ErrUnknownAgent.Error()) {
		t.Fatalf("job %s errors %v; want cancelled with ErrUnknownAgent", j.State, j.Errors)
	}
}

func TestApproval(t *testing.T) { forEach(t, testApproval, testApproval, "effect", "transfer") }

// testApproval pauses a run, decides it in another process, and checks
// that the resume job finishes it with the approved tool run once.
func testApproval[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: "ap", Agent: "agent", SessionID: "s", Text: "pay"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	out := output(t, j)
	if out.Status != riverrun.StatusInterrupted || len(out.Pending) != 1 || out.Pending[0].Tool != "transfer" {
		t.Fatalf("output = %+v, want interrupted on transfer", out)
	}
	pending, err := e.runs.Pending(ctx, "ap")
	if err != nil || len(pending) != 1 || pending[0].CallID != out.Pending[0].CallID {
		t.Fatalf("Pending = %+v, %v; want the call the job recorded", pending, err)
	}
	if n := e.stack.fx.Count("ap/" + pending[0].CallID); n != 0 {
		t.Fatalf("transfer ran %d times before approval", n)
	}

	// Decide in another process.
	line := runChild(t, childConfig{Mode: "decide", Backend: e.b, RunID: "ap", CallID: pending[0].CallID})
	if !strings.HasPrefix(line, "enqueued ") {
		t.Fatalf("child said %q, want enqueued", line)
	}
	j = waitRunJob(t, e.runs, "ap", rivertype.JobStateCompleted)
	if out := output(t, j); out.Status != riverrun.StatusFinished || out.FinalOutput != "done" {
		t.Fatalf("resume job output = %+v, want finished", out)
	}
	if n := e.stack.fx.Count("ap/" + pending[0].CallID); n != 1 {
		t.Fatalf("transfer ran %d times, want 1", n)
	}
	// The run is done: a late decision is refused.
	_, err = e.runs.Decide(ctx, "ap", riverrun.Reject(pending[0].CallID, "too late"))
	if _, ok := errors.AsType[*riverrun.DecideError](err); !ok || !errors.Is(err, riverrun.ErrFinished) {
		t.Fatalf("late Decide = %v, want a DecideError wrapping ErrFinished", err)
	}
}

func TestElicitation(t *testing.T) { forEach(t, testElicitation, testElicitation, "ask") }

// testElicitation pauses a run on a tool's request for input, answers it
// through the client, and checks that the resume job finishes the run
// with the answer given to the tool.
func testElicitation[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: "el", Agent: "agent", SessionID: "s", Text: "ask"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := output(t, waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted))
	if out.Status != riverrun.StatusInterrupted || len(out.Pending) != 1 || out.Pending[0].Elicitation.Message != "how many?" {
		t.Fatalf("output = %+v, want interrupted on the request", out)
	}
	call := out.Pending[0].CallID
	if _, err := e.runs.Decide(ctx, "el", riverrun.Approve(call)); !errors.Is(err, state.ErrNotElicitation) {
		t.Fatalf("Approve of a call waiting for an answer = %v, want ErrNotElicitation", err)
	}
	if _, err := e.runs.Decide(ctx, "el", riverrun.Answer(call, state.Accept, `{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	if out := output(t, waitRunJob(t, e.runs, "el", rivertype.JobStateCompleted)); out.Status != riverrun.StatusFinished {
		t.Fatalf("resume job output = %+v, want finished", out)
	}
	run, err := e.store.Load(ctx, "el")
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := run.Completed(call); !ok {
		t.Fatal("the call has no output")
	} else if got, _ := run.ItemAt(it); got.Text() != `accept {"n":3}` {
		t.Fatalf("the tool's output %q, want the answer", got.Text())
	}
}

func TestDecideRefusals(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { testDecideRefusals(t, pgBackend(t), openPG) })
	t.Run("sqlite", func(t *testing.T) { testDecideRefusals(t, sqliteBackend(t), openSQLite) })
}

// testDecideRefusals decides runs with no worker running, so the resume
// jobs stay queued.
func testDecideRefusals[TTx any](t *testing.T, b backend, open opener[TTx]) {
	ctx := t.Context()
	st, err := b.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	rc, err := river.NewClient(db.driver, riverConfig(b.Schema, nil))
	if err != nil {
		t.Fatal(err)
	}
	runs := riverrun.NewClient(rc, st)
	for _, s := range []riverrun.Start{
		{Agent: "a", Text: "x"},
		{RunID: "r", Text: "x"},
		{RunID: "r", Agent: "a"},
		{RunID: "r", Agent: "a", Text: "x", Input: pipeline.UserInput("y")},
	} {
		if _, err := runs.Enqueue(ctx, s, nil); !errors.Is(err, riverrun.ErrInvalidStart) {
			t.Errorf("Enqueue(%+v) = %v, want ErrInvalidStart", s, err)
		}
	}
	stack := newTestStack(st, "transfer", "transfer")
	pause := func(id string) []state.Approval {
		res, err := stack.runner.Run(ctx, stack.agent, pipeline.UserInput("pay"), pipeline.WithRunID(id), pipeline.WithSessionID("s"))
		if err != nil || !res.Interrupted() || len(res.Interruptions()) != 2 {
			t.Fatalf("Run(%s) = %+v, %v; want two pending calls", id, res, err)
		}
		return res.Interruptions()
	}
	p := pause("d1")
	if _, err := runs.EnqueueResume(ctx, "d1"); !errors.Is(err, riverrun.ErrUndecided) {
		t.Fatalf("EnqueueResume(undecided) = %v, want ErrUndecided", err)
	}
	// One of two decided: no job yet.
	if res, err := runs.Decide(ctx, "d1", riverrun.Approve(p[0].CallID)); err != nil || res != nil {
		t.Fatalf("Decide(first of two) = %+v, %v; want no job", res, err)
	}
	if _, err := runs.Decide(ctx, "d1", riverrun.Approve("call_nope")); !errors.Is(err, state.ErrUnknownCall) {
		t.Fatalf("Decide(unknown call) = %v, want ErrUnknownCall", err)
	}
	res, err := runs.Decide(ctx, "d1", riverrun.Reject(p[1].CallID, "no"))
	if err != nil || res == nil || res.UniqueSkippedAsDuplicate {
		t.Fatalf("Decide(last) = %+v, %v; want the resume job", res, err)
	}
	if res.Job.State != rivertype.JobStateAvailable {
		t.Fatalf("resume job %s", res.Job.State)
	}
	_, err = runs.Decide(ctx, "d1", riverrun.Approve(p[0].CallID))
	if _, ok := errors.AsType[*riverrun.DecideError](err); !ok || !errors.Is(err, state.ErrAlreadyDecided) {
		t.Fatalf("second Decide = %v, want DecideError wrapping ErrAlreadyDecided", err)
	}
	again, err := runs.EnqueueResume(ctx, "d1")
	if err != nil || !again.UniqueSkippedAsDuplicate || again.Job.ID != res.Job.ID {
		t.Fatalf("EnqueueResume(decided, enqueued) = %+v, %v; want a duplicate", again, err)
	}

	// A crash between the decision's save and the job's insert: the retry
	// of the decision is refused, and enqueues the job.
	p = pause("d2")
	run, err := st.Load(ctx, "d2")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p {
		if err := run.Approve(a.CallID); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Save(ctx, run); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := runs.Jobs(ctx, "d2"); len(jobs) != 0 {
		t.Fatalf("%d jobs before the retry", len(jobs))
	}
	if _, err := runs.Decide(ctx, "d2", riverrun.Approve(p[0].CallID)); !errors.Is(err, state.ErrAlreadyDecided) {
		t.Fatalf("retried Decide = %v, want ErrAlreadyDecided", err)
	}
	if jobs, _ := runs.Jobs(ctx, "d2"); len(jobs) != 1 || jobs[0].State != rivertype.JobStateAvailable {
		t.Fatalf("jobs after the retry: %d, want the resume job", len(jobs))
	}
	if _, err := runs.Decide(ctx, "missing", riverrun.Approve("x")); !errors.Is(err, riverrun.ErrNoCheckpoint) {
		t.Fatalf("Decide(no checkpoint) = %v, want ErrNoCheckpoint", err)
	}
}

func TestCancel(t *testing.T) { forEach(t, testCancel, testCancel, "effect") }

// testCancel cancels a run's job while its tool runs, and resumes it.
func testCancel[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	e.stack.block.Store(true)
	res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: "c1", Agent: "agent", SessionID: "s", Text: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, e.rc, res.Job.ID, rivertype.JobStateRunning)
	for len(e.stack.fx.OfRun("c1")) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		default:
		}
	}
	cancelled, err := e.runs.Cancel(ctx, "c1")
	if err != nil || len(cancelled) != 1 {
		t.Fatalf("Cancel = %d jobs, %v", len(cancelled), err)
	}
	j := waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCancelled)
	if out := output(t, j); out.Status != riverrun.StatusFailed || !strings.Contains(out.Error, context.Canceled.Error()) {
		t.Fatalf("cancelled job output = %+v", out)
	}
	run, err := e.store.Load(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, done := run.FinalOutput(); done || run.Len() < 2 {
		t.Fatalf("checkpoint after cancel: finished %v, %d items; want the run mid-way", done, run.Len())
	}
	// The checkpoint resumes: the call runs again under its own key.
	res, err = e.runs.EnqueueResume(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	if out := output(t, j); out.Status != riverrun.StatusFinished || out.FinalOutput != "done" {
		t.Fatalf("resume output = %+v", out)
	}
	if got := e.stack.fx.OfRun("c1"); len(got) != 2 || got[0] != got[1] || e.stack.fx.Len() != 2 {
		t.Fatalf("the run's executions %v (%d in all), want effect twice under one key", got, e.stack.fx.Len())
	}
	items, err := e.store.List(ctx, "s", 0)
	if err != nil || len(items) != 4 {
		t.Fatalf("session holds %d items (%v), want 4", len(items), err)
	}
}

// flakyStore fails the next load of a run with the error set for it.
type flakyStore struct {
	store
	mu   sync.Mutex
	errs map[string]error
}

func (s *flakyStore) Load(ctx context.Context, runID string) (*state.Run, error) {
	s.mu.Lock()
	err := s.errs[runID]
	delete(s.errs, runID)
	s.mu.Unlock()
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	return s.store.Load(ctx, runID)
}

// TestStoreErrors checks that a store's I/O error retries the job, and a
// checkpoint that does not decode fails it.
func TestStoreErrors(t *testing.T) {
	b := sqliteBackend(t)
	ctx := t.Context()
	st, err := b.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := openSQLite(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	flaky := &flakyStore{store: st, errs: map[string]error{
		"io":  errors.New("connection reset by peer"),
		"bad": &state.DecodeError{Path: "$.run", Err: state.ErrMalformed},
	}}
	stack := newTestStack(flaky, "effect")
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(stack.runner, stack.cp, riverrun.NewRegistry(stack.agent)))
	rc, err := river.NewClient(db.driver, riverConfig("", workers))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.Stop(sctx)
	}()
	runs := riverrun.NewClient(rc, st)
	for _, tc := range []struct {
		run     string
		state   rivertype.JobState
		attempt int
		status  riverrun.Status
	}{
		{"io", rivertype.JobStateCompleted, 2, riverrun.StatusFinished},
		{"bad", rivertype.JobStateCancelled, 1, riverrun.StatusFailed},
	} {
		res, err := runs.Enqueue(ctx, riverrun.Start{RunID: tc.run, Agent: "agent", SessionID: "s", Text: "go"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		j := waitJob(t, rc, res.Job.ID, rivertype.JobStateCompleted, rivertype.JobStateCancelled)
		if out := output(t, j); j.State != tc.state || j.Attempt != tc.attempt || out.Status != tc.status {
			t.Errorf("run %s: job %s attempt %d output %+v; want %s at attempt %d", tc.run, j.State, j.Attempt, out, tc.state, tc.attempt)
		}
	}
}
