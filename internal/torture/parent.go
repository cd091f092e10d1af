package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/turnkit/turnkit/internal/childproc"
)

// A Launcher returns the command that starts a child: a program whose
// main (or TestMain) calls [ChildMain] first. The harness adds the child's
// environment and pipes.
type Launcher = childproc.Launcher

// SelfLauncher starts the running executable again with args (a test
// binary passes "-test.run=^$" so that it runs no tests).
func SelfLauncher(args ...string) (Launcher, error) {
	l, err := childproc.Self(args...)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	return l, nil
}

// child is a started child process.
type child = childproc.Child

func startChild(launch Launcher, cfg childConfig) (*child, error) {
	c, err := childproc.Start(launch, EnvChild, cfg, 64)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	return c, nil
}

// parseStats reads a "stats {...}" line.
func parseStats(line string) (WorkerStats, bool) {
	rest, ok := strings.CutPrefix(line, "stats ")
	if !ok {
		return WorkerStats{}, false
	}
	var s WorkerStats
	if json.Unmarshal([]byte(rest), &s) != nil {
		return WorkerStats{}, false
	}
	return s, true
}

func addStats(a *WorkerStats, b WorkerStats) {
	a.Started += b.Started
	a.Resumed += b.Resumed
	a.Decided += b.Decided
	a.Completed += b.Completed
	a.Conflicts += b.Conflicts
	a.Items += b.Items
	a.ModelRetries += b.ModelRetries
	a.Pops += b.Pops
}

var errTimeout = errors.New("torture: child timed out")

// awaitChild waits for the child to exit, or to report armed (then kills
// it), or for the delay (when positive; then kills it), or for the
// timeout. It returns whether the child was killed and its stats if it
// reported them.
func awaitChild(ctx context.Context, c *child, delay, timeout time.Duration) (killed bool, stats WorkerStats, err error) {
	var fire <-chan time.Time
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		fire = t.C
	}
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	lines := c.Lines
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil // EOF; wait for the exit
				continue
			}
			if strings.HasPrefix(line, "armed ") {
				c.Kill()
				return true, stats, nil
			}
			if s, ok := parseStats(line); ok {
				stats = s
			}
		case <-fire:
			c.Kill()
			return true, stats, nil
		case <-c.Done():
			if lines != nil {
				for line := range lines { // the rest of stdout; closed before waited
					if s, ok := parseStats(line); ok {
						stats = s
					}
				}
			}
			if c.Err() != nil {
				return false, stats, c.Failure("child")
			}
			return false, stats, nil
		case <-limit.C:
			c.Kill()
			return true, stats, fmt.Errorf("%w after %v", errTimeout, timeout)
		case <-ctx.Done():
			c.Kill()
			return true, stats, ctx.Err()
		}
	}
}
