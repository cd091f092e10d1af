package riverrun_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/internal/torture"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/state"
)

// workerConfig configures a worker child of the kill test.
type workerConfig struct {
	Seed     uint64 `json:"seed"`
	Prefix   string `json:"prefix"`
	Runs     int    `json:"runs"`
	Sessions int    `json:"sessions"`
	// Hook and Nth arm a torture.Trap: the child blocks there, and says
	// so, for the parent to kill it.
	Hook torture.Hook `json:"hook,omitempty"`
	Nth  int          `json:"nth,omitempty"`
}

func (w workerConfig) plan() torture.Plan {
	return torture.NewPlan(w.Seed, w.Prefix, w.Runs, w.Sessions)
}

// Timing of the kill test's River clients: a live job's attempt is
// cancelled by its own worker at jobTimeout, well before the rescuer
// takes a job for dead at rescueAfter, so only killed workers' jobs are
// rescued.
const (
	killJobTimeout  = 3 * time.Second
	killRescueAfter = 4 * time.Second
)

// workerChild works the torture plan's runs as River jobs until its stdin
// closes, then stops gracefully.
func workerChild[TTx any](ctx context.Context, cfg childConfig, open opener[TTx]) error {
	wc := cfg.Worker
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
	log, err := torture.OpenEffectLog(filepath.Join(cfg.Backend.Dir, "effects.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	var hooks torture.Hooks
	if wc.Hook != "" {
		hooks = &torture.Trap{Hook: wc.Hook, Nth: wc.Nth, W: os.Stdout}
	}
	stack := torture.NewStack(wc.plan(), st, st, log, hooks)
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(stack.Runner, stack.Checkpoints, riverrun.NewRegistry(stack.Agent)))
	rcfg := riverConfig(cfg.Backend.Schema, workers)
	rcfg.JobTimeout, rcfg.RescueStuckJobsAfter = killJobTimeout, killRescueAfter
	rcfg.LeaderElectionDisabled = true // the parent leads: it is never killed
	if cfg.Backend.Name == "sqlite" {
		// One writer at a time: more jobs at once only wait for the lock.
		rcfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}}
	}
	rc, err := river.NewClient(db.driver, rcfg)
	if err != nil {
		return err
	}
	if err := rc.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return rc.Stop(sctx)
}

// killChild is a running worker child.
type killChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its output is read to the end
	trap  bool
}

type childLine struct {
	c    *killChild
	line string
}

func startKillChild(t *testing.T, cfg childConfig, lines chan<- childLine, wg *sync.WaitGroup) *killChild {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &killChild{cmd: cmd, stdin: in, done: make(chan struct{}), trap: cfg.Worker.Hook != ""}
	wg.Go(func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- childLine{c: c, line: sc.Text()}
		}
	})
	return c
}

func TestKillWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill test")
	}
	t.Run("postgres", func(t *testing.T) { testKillWorkers(t, pgBackend(t), openPG, 3, 16, 4) })
	// SQLite runs one writer at a time: fewer workers and runs keep the
	// round short.
	t.Run("sqlite", func(t *testing.T) { testKillWorkers(t, sqliteBackend(t), openSQLite, 2, 6, 2) })
}

// seedFlag and TURNKIT_KILL_SEED replay a kill test's seed.
var seedFlag = flag.Uint64("seed", 0, "the kill test's seed (0: from the clock; TURNKIT_KILL_SEED also sets it)")

// killSeed returns the seed of a kill test's plan and kill points: -seed,
// else TURNKIT_KILL_SEED, else the clock. It is logged at the start and
// again if the test fails, with how to replay it (the plan and the kill
// points repeat; the timing of the processes does not).
func killSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if s := os.Getenv("TURNKIT_KILL_SEED"); seed == 0 && s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TURNKIT_KILL_SEED=%q: %v", s, err)
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: go test -run '^%s$' ./riverrun -args -seed=%d (or TURNKIT_KILL_SEED=%d)", t.Name(), seed, seed)
		}
	})
	return seed
}

// testKillWorkers runs a torture plan of nruns runs as River jobs on
// procs worker processes, aiming at wantKills kills: SIGKILLs workers at random hook points (mid model call,
// after a tool returned, around appends and saves), starts fresh ones,
// and decides approvals from this process. River's rescuer (led by this
// process, which is never killed) hands the dead workers' jobs to live
// ones, which resume from the checkpoints. At the end torture.Check
// proves that every run ended as planned, no tool ran under two keys or
// twice without a kill, nothing is stored twice, and every session is
// valid model input.
func testKillWorkers[TTx any](t *testing.T, b backend, open opener[TTx], procs, nruns, wantKills int) {
	// A guard against a hang, not a time the test must keep: on a loaded
	// machine (CI runs every module's tests at once on two cores) the
	// kills, restarts and rescues of one run have taken over 50 s.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	wc := workerConfig{Seed: seed, Prefix: "k", Runs: nruns, Sessions: 4}
	plan := wc.plan()
	specs := make(map[string]torture.RunSpec, len(plan.Runs))
	for _, r := range plan.Runs {
		specs[r.ID] = r
	}

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

	// This process leads River (its rescuer rescues the dead workers'
	// jobs) and works no run: its queue is another. A rescuer runs when
	// its client gains the lead, then every 30s; the test restarts the
	// client to run it sooner.
	newLeader := func() *river.Client[TTx] {
		stack := newTestStack(st)
		workers := river.NewWorkers()
		river.AddWorker(workers, riverrun.NewWorker(stack.runner, stack.cp, riverrun.NewRegistry(stack.agent)))
		cfg := riverConfig(b.Schema, workers)
		cfg.Queues = map[string]river.QueueConfig{"leader": {MaxWorkers: 1}}
		cfg.JobTimeout, cfg.RescueStuckJobsAfter = killJobTimeout, killRescueAfter
		rc, err := river.NewClient(db.driver, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return rc
	}
	stopLeader := func(rc *river.Client[TTx]) {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rc.Stop(sctx); err != nil {
			t.Errorf("stop the leader: %v", err)
		}
	}
	leader := newLeader()
	defer func() { stopLeader(leader) }()
	runs := riverrun.NewClient(leader, st)

	for _, r := range plan.Runs {
		if _, err := runs.Enqueue(ctx, riverrun.Start{RunID: r.ID, Agent: torture.AgentA, SessionID: r.Session, Text: r.Input}, nil); err != nil {
			t.Fatal(err)
		}
	}

	lines := make(chan childLine, 64)
	var wg sync.WaitGroup
	children := map[*killChild]bool{}
	kills := 0
	killed := map[int]bool{}
	armed := 0
	spawn := func() {
		w := wc
		switch {
		case armed == 0:
			// Every job calls the model: the round's first trap fires at
			// its worker's first job, so the round has a kill whatever
			// the draws below miss (a rare hook, a late Nth).
			w.Hook, w.Nth = torture.HookModel, 1
			armed++
		case kills+countTraps(children) < wantKills:
			// The workers archive nothing and pop nothing: a trap at
			// HookPrune or HookPop would never fire.
			w.Hook, w.Nth = torture.StackHooks[rng.IntN(len(torture.StackHooks))], 1+rng.IntN(6)
			armed++
		}
		children[startKillChild(t, childConfig{Mode: "worker", Backend: b, Worker: &w}, lines, &wg)] = true
	}
	defer func() {
		for c := range children {
			_ = c.stdin.Close()
		}
		for c := range children {
			waitOrKill(c, 15*time.Second)
		}
		wg.Wait()
	}()
	for range procs {
		spawn()
	}

	done := map[string]bool{}
	decided := 0
	bounce := time.NewTicker(500 * time.Millisecond)
	defer bounce.Stop()
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	for len(done) < len(plan.Runs) {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d runs ended before the deadline (%d kills)", len(done), len(plan.Runs), kills)
		case l := <-lines:
			if !strings.HasPrefix(l.line, "armed ") || !children[l.c] {
				continue
			}
			_ = l.c.cmd.Process.Signal(syscall.SIGKILL)
			killed[l.c.cmd.Process.Pid] = true
			kills++
			delete(children, l.c)
			_ = l.c.cmd.Wait()
			t.Logf("killed worker %d at %s", l.c.cmd.Process.Pid, strings.TrimPrefix(l.line, "armed "))
			spawn()
		case <-bounce.C:
			// A dead worker's job looks stuck once it ran longer than
			// killRescueAfter; then restart the leader, whose rescuer runs
			// when it takes the lead. Not more often: a client that just
			// took the lead also runs River's scheduler, which makes
			// retried jobs available.
			if testing.Verbose() {
				t.Logf("%d of %d runs ended, %d kills", len(done), len(plan.Runs), kills)
			}
			stuck, err := leader.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateRunning).First(100))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(stuck.Jobs, func(j *rivertype.JobRow) bool {
				return j.AttemptedAt != nil && time.Since(*j.AttemptedAt) > killRescueAfter
			}) {
				continue
			}
			stopLeader(leader) // resigns; the next client leads and rescues at once
			leader = newLeader()
			if testing.Verbose() {
				t.Logf("new leader")
			}
			runs = riverrun.NewClient(leader, st)
		case <-poll.C:
			for _, r := range plan.Runs {
				if done[r.ID] {
					continue
				}
				ended, n, err := settle(ctx, runs, st, r)
				if err != nil {
					t.Fatal(err)
				}
				decided += n
				if ended {
					done[r.ID] = true
				}
			}
		}
	}

	execs, _, err := torture.ReadEffectLog(filepath.Join(b.Dir, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := torture.Check(ctx, st, st, plan, execs, killed, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		t.Error(v)
	}
	rescued, jobs := 0, 0
	for _, r := range plan.Runs {
		js, err := runs.Jobs(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		jobs += len(js)
		for _, j := range js {
			for _, e := range j.Errors {
				if strings.Contains(e.Error, "rescued") {
					rescued++
				}
			}
		}
	}
	t.Logf("%d runs (%d tripped), %d jobs, %d kills, %d jobs rescued, %d decisions, %d tool executions, %d retried after a kill",
		res.Finished, res.Tripped, jobs, kills, rescued, decided, res.Executions, res.Retries)
	// A trap armed late may find no work left to kill in: a kill and a
	// rescue are the least a meaningful round has.
	if kills < 1 || rescued < 1 {
		t.Errorf("%d kills and %d rescues, want at least 1 of each", kills, rescued)
	}
}

func countTraps(children map[*killChild]bool) int {
	n := 0
	for c := range children {
		if c.trap {
			n++
		}
	}
	return n
}

// waitOrKill waits for the child to exit, and kills it after d.
func waitOrKill(c *killChild, d time.Duration) {
	exited := make(chan struct{})
	go func() {
		<-c.done
		_ = c.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(d):
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// settle looks at a run whose jobs are all final: it reports whether the
// run ended (finished, or stopped by its planned tripwire), and decides a
// run paused for approval as its plan says (returning the decisions
// made). A run that failed otherwise is an error.
func settle[TTx any](ctx context.Context, runs *riverrun.Client[TTx], st store, r torture.RunSpec) (ended bool, decided int, err error) {
	jobs, err := runs.Jobs(ctx, r.ID)
	if err != nil || len(jobs) == 0 {
		return false, 0, err
	}
	for _, j := range jobs {
		if j.State != rivertype.JobStateCompleted && j.State != rivertype.JobStateCancelled && j.State != rivertype.JobStateDiscarded {
			return false, 0, nil
		}
	}
	last := jobs[len(jobs)-1]
	out, ok, err := riverrun.OutputOf(last.Metadata)
	if err != nil {
		return false, 0, err
	}
	switch {
	case ok && out.Status == riverrun.StatusFinished:
		return true, 0, nil
	case ok && out.Status == riverrun.StatusFailed && r.Trip && last.State == rivertype.JobStateCancelled &&
		strings.Contains(out.Error, "guardrail \"torture_trip\" tripped"):
		return true, 0, nil
	case ok && out.Status == riverrun.StatusInterrupted:
	default:
		return false, 0, fmt.Errorf("run %s: job %d %s with output %+v, errors %v", r.ID, last.ID, last.State, out, last.Errors)
	}
	pending, err := runs.Pending(ctx, r.ID)
	if err != nil || len(pending) == 0 {
		return false, 0, err
	}
	var ds []riverrun.Decision
	for _, a := range pending {
		var args struct {
			Reject bool `json:"reject"`
		}
		if err := json.Unmarshal([]byte(a.Arguments), &args); err != nil {
			return false, 0, err
		}
		if args.Reject {
			ds = append(ds, riverrun.Reject(a.CallID, torture.RejectMessage))
		} else {
			ds = append(ds, riverrun.Approve(a.CallID))
		}
	}
	if _, err := runs.Decide(ctx, r.ID, ds...); err != nil && !isDecided(err) {
		return false, 0, err
	}
	return false, len(ds), nil
}

// isDecided reports a refusal of a decision already made (by an earlier
// poll whose job has not started yet); Decide made sure of its job.
func isDecided(err error) bool {
	return errors.Is(err, state.ErrAlreadyDecided)
}
