package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Config configures [Torture].
type Config struct {
	Backend Backend
	Launch  Launcher
	// Kills is how many times the loop kills a child (at least 1).
	Kills int
	// Seed makes the plans and the kill points reproducible.
	Seed uint64
	// Runs and Sessions size each generation's plan (defaults 8 and 3);
	// Concurrency is the runs a child drives at once (default 4).
	Runs, Sessions, Concurrency int
	// MaxDelay bounds the random delay of a kill by time (default 250ms);
	// MaxNth bounds the random occurrence of a kill at a hook (default 40;
	// an eighth of it at [HookLookupReturned]).
	MaxDelay time.Duration
	MaxNth   int
	// ChildTimeout bounds one child's life (default 2m).
	ChildTimeout time.Duration
	// Progress, if set, gets a line per generation.
	Progress io.Writer
}

// A Report is what [Torture] did and found.
type Report struct {
	Backend       string         `json:"backend"`
	Kills         int            `json:"kills"`
	KillsAt       map[string]int `json:"kills_at"` // by hook, and "delay"
	Children      int            `json:"children"`
	Generations   int            `json:"generations"`
	Runs          int            `json:"runs"`    // runs ended and checked
	Tripped       int            `json:"tripped"` // of which stopped by the output guardrail
	Handoffs      int            `json:"handoffs"`
	Withheld      int            `json:"withheld"` // terminal outputs withheld after a tripwire
	Approvals     int64          `json:"decided"`  // approvals and rejections made
	Resumes       int64          `json:"resumes"`  // resumes reported by children that exited
	Executions    int            `json:"executions"`
	Retries       int            `json:"retries"`         // executions repeated under the same key after a crash
	LostRetryable int            `json:"lost_retryable"`  // lookups whose response a crash lost, run again under a new call ID
	ModelRetries  int64          `json:"model_retries"`   // flaky model calls made again by the retry middleware (children that exited)
	TimedOut      int            `json:"timed_out"`       // lookups whose output is their timeout
	TimedOutEarly int            `json:"timed_out_early"` // lookups whose limit passed before they began (a busy machine)
	Completed     int64          `json:"completed"`
	// Pruned counts the ended runs whose checkpoint the retention deleted
	// (the generations run in turn with checkpoint.DeleteFinished,
	// checkpoint.KeepLast(1) and checkpoint.KeepAll).
	Pruned int `json:"pruned"`
	// PoppedOwn and PoppedHistory count the runs popped while paused
	// (see [WithPops]): resumed after pops of their own items, and paused
	// for good after a pop into their history; Pops the items popped
	// (children that exited).
	PoppedOwn     int           `json:"popped_own"`
	PoppedHistory int           `json:"popped_history"`
	Pops          int64         `json:"pops"`
	Violations    []string      `json:"violations,omitempty"`
	Elapsed       time.Duration `json:"elapsed"`
}

// Torture runs the kill-and-resume loop: generation after generation of
// runs, each driven by child processes that it kills with SIGKILL at
// random points (a random delay, or a random occurrence of a random
// [Hook]; every fifth child at one of the first lookups, whose window is
// short) until a child drives the generation to its end. After every
// child (after a killed one, once the database server has ended every
// statement it sent: see settle.go) it runs [CheckArchived] on the
// stores, the archive and the effect log; after the last
// child of a generation with final set. It stops after cfg.Kills kills,
// once the generation in progress is done. The report's Violations must be
// empty; an error means the harness itself could not go on.
func Torture(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	start := time.Now()
	rep := &Report{Backend: cfg.Backend.Name(), KillsAt: make(map[string]int)}
	store, err := cfg.Backend.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b696c6c))
	killed := make(map[int]bool)
	for gen := 0; rep.Kills < cfg.Kills; gen++ {
		ccfg := childConfig{
			Mode: modeDrive, Backend: cfg.Backend, Prefix: fmt.Sprintf("g%04d", gen), Seed: cfg.Seed + uint64(gen),
			Runs: cfg.Runs, Sessions: cfg.Sessions, Conc: cfg.Concurrency, Recover: true,
			Retention: []string{RetainDelete, RetainLast, ""}[gen%3], Pops: []string{PopOwn, PopHistory}[gen%2],
		}
		plan := ccfg.plan()
		for children := 0; ; children++ {
			if children > 10*cfg.Kills+50 {
				return rep, fmt.Errorf("torture: generation %d does not finish", gen)
			}
			c := ccfg
			c.Tag = fmt.Sprintf("torture-%d-%d", os.Getpid(), rep.Children)
			var delay time.Duration
			if rep.Kills < cfg.Kills {
				switch {
				case rep.Children%5 == 4: // just after one of the first lookups: a window random kills seldom hit
					c.Hook, c.Nth = HookLookupReturned, 1+rng.IntN(max(cfg.MaxNth/8, 1))
				case rng.IntN(2) == 0:
					c.Hook, c.Nth = AllHooks[rng.IntN(len(AllHooks))], 1+rng.IntN(cfg.MaxNth)
				default:
					delay = time.Duration(1 + rng.Int64N(int64(cfg.MaxDelay)))
				}
			}
			ch, err := startChild(cfg.Launch, c)
			if err != nil {
				return rep, err
			}
			rep.Children++
			wasKilled, stats, err := awaitChild(ctx, ch, delay, cfg.ChildTimeout)
			if errors.Is(err, errTimeout) {
				rep.Violations = append(rep.Violations, fmt.Sprintf("generation %d: child %d: %v", gen, ch.Pid(), err))
			} else if err != nil && ctx.Err() != nil {
				return rep, err
			} else if err != nil {
				rep.Violations = append(rep.Violations, fmt.Sprintf("generation %d: %v", gen, err))
				return rep, nil // a child failed: the stores are left for inspection
			}
			if wasKilled {
				killed[ch.Pid()] = true
				rep.Kills++
				if delay > 0 {
					rep.KillsAt["delay"]++
				} else {
					rep.KillsAt[string(c.Hook)]++
				}
			} else {
				rep.Approvals += stats.Decided
				rep.Resumes += stats.Resumed
				rep.Completed += stats.Completed
				rep.ModelRetries += stats.ModelRetries
				rep.Pops += stats.Pops
			}
			res, err := checkChild(ctx, cfg.Backend, c.Tag, wasKilled, store, store, plan, killed)
			if err != nil {
				return rep, err
			}
			for _, v := range res.Violations {
				rep.Violations = append(rep.Violations, fmt.Sprintf("generation %d after child %d: %s", gen, ch.Pid(), v))
			}
			if wasKilled {
				continue
			}
			rep.Generations++
			rep.Runs += res.Finished
			rep.Tripped += res.Tripped
			rep.Handoffs += res.Handoffs
			rep.Withheld += res.Withheld
			rep.Executions += res.Executions
			rep.Retries += res.Retries
			rep.LostRetryable += res.LostRetryable
			rep.TimedOut += res.TimedOut
			rep.TimedOutEarly += res.TimedOutEarly
			rep.Pruned += res.Pruned
			rep.PoppedOwn += res.PoppedOwn
			rep.PoppedHistory += res.PoppedHistory
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "generation %d: %d children, kills %d/%d, retries %d, lost lookups %d, violations %d\n",
					gen, children+1, rep.Kills, cfg.Kills, rep.Retries, rep.LostRetryable, len(rep.Violations))
			}
			break
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkChild runs [CheckArchived] on the stores, the archive and the
// effect log after the child named tag ended: after a killed one, once the
// database server has ended every statement the child sent (settle), so
// that the check reads all of what the child wrote or none of it. A
// checkpoint save sent with its append and its commit can still be running
// on the server when the child is gone; a check that did not wait could
// read the run's checkpoint before that commit and its session after it,
// and report items without a checkpoint that were written together.
// killed holds the IDs of the processes killed so far, this one included.
func checkChild(ctx context.Context, b Backend, tag string, wasKilled bool, sessions session.Store, states state.Store, plan Plan, killed map[int]bool) (CheckResult, error) {
	if wasKilled {
		if err := b.settle(ctx, tag); err != nil {
			return CheckResult{}, err
		}
	}
	execs, _, err := ReadEffectLog(b.EffectLogPath())
	if err != nil {
		return CheckResult{}, err
	}
	archived, err := ReadArchive(b.ArchivePath())
	if err != nil {
		return CheckResult{}, err
	}
	return CheckArchived(ctx, sessions, states, archived, plan, execs, killed, !wasKilled)
}

func (c *Config) defaults() {
	c.Kills = max(c.Kills, 1)
	if c.Runs <= 0 {
		c.Runs = 8
	}
	if c.Sessions <= 0 {
		c.Sessions = 3
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = 250 * time.Millisecond
	}
	if c.MaxNth <= 0 {
		c.MaxNth = 40
	}
	if c.ChildTimeout <= 0 {
		c.ChildTimeout = 2 * time.Minute
	}
}
