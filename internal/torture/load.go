package torture

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A LoadConfig configures [Load].
type LoadConfig struct {
	Backend Backend
	Launch  Launcher
	// Runs over Sessions shared sessions (defaults 200 and 20), driven by
	// Processes worker processes (default 2) of Workers goroutines each
	// (default 4).
	Runs, Sessions, Processes, Workers int
	Seed                               uint64
	// Prefix names the plan's runs and sessions (default "load").
	Prefix  string
	Timeout time.Duration // default 5m
}

// A LoadReport is what [Load] measured and found.
type LoadReport struct {
	Backend    string        `json:"backend"`
	Runs       int           `json:"runs"`
	Processes  int           `json:"processes"`
	Workers    int           `json:"workers"`
	Stats      WorkerStats   `json:"stats"` // summed over the processes
	Executions int           `json:"executions"`
	Retries    int           `json:"retries"`
	Elapsed    time.Duration `json:"elapsed"`
	Violations []string      `json:"violations,omitempty"`
}

// RunsPerSecond returns the finished runs per second of wall time.
func (r *LoadReport) RunsPerSecond() float64 { return float64(r.Runs) / r.Elapsed.Seconds() }

// Load drives a plan of many runs over shared sessions with several worker
// processes at once, each with several goroutines, on one backend. Every
// worker may take any run: starting a run and resuming a paused one are
// claimed with a compare-and-swap save, so a worker that loses gets a
// typed conflict, which it counts and retries later; any other error
// fails the worker and is reported as a violation. After every process
// exited, [Check] must find every run finished and complete, and no tool
// run twice (nobody was killed).
func Load(ctx context.Context, cfg LoadConfig) (*LoadReport, error) {
	cfg.defaults()
	ccfg := childConfig{
		Mode: modeDrive, Backend: cfg.Backend, Prefix: cfg.Prefix, Seed: cfg.Seed,
		Runs: cfg.Runs, Sessions: cfg.Sessions, Conc: cfg.Workers,
	}
	rep := &LoadReport{Backend: cfg.Backend.Name(), Processes: cfg.Processes, Workers: cfg.Workers}
	store, err := cfg.Backend.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	start := time.Now()
	children := make([]*child, cfg.Processes)
	for i := range children {
		if children[i], err = startChild(cfg.Launch, ccfg); err != nil {
			for _, c := range children[:i] {
				c.Kill()
			}
			return nil, err
		}
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range children {
		wg.Go(func() {
			_, stats, err := awaitChild(ctx, c, 0, cfg.Timeout)
			mu.Lock()
			defer mu.Unlock()
			addStats(&rep.Stats, stats)
			if err != nil {
				rep.Violations = append(rep.Violations, fmt.Sprintf("worker process %d: %v", c.Pid(), err))
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	execs, _, err := ReadEffectLog(cfg.Backend.EffectLogPath())
	if err != nil {
		return rep, err
	}
	var mine []Execution
	for _, e := range execs {
		if strings.HasPrefix(e.Run, cfg.Prefix+"-") {
			mine = append(mine, e)
		}
	}
	res, err := Check(ctx, store, store, ccfg.plan(), mine, nil, true)
	if err != nil {
		return rep, err
	}
	rep.Runs, rep.Executions, rep.Retries = res.Finished, res.Executions, res.Retries
	rep.Violations = append(rep.Violations, res.Violations...)
	return rep, nil
}

func (c *LoadConfig) defaults() {
	if c.Runs <= 0 {
		c.Runs = 200
	}
	if c.Sessions <= 0 {
		c.Sessions = 20
	}
	if c.Processes <= 0 {
		c.Processes = 2
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Prefix == "" {
		c.Prefix = "load"
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
}
