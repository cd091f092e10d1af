package torture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A Launcher returns the command that starts a child: a program whose
// main (or TestMain) calls [ChildMain] first. The harness adds the child's
// environment and pipes.
type Launcher func() *exec.Cmd

// SelfLauncher starts the running executable again with args (a test
// binary passes "-test.run=^$" so that it runs no tests).
func SelfLauncher(args ...string) (Launcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("torture: find the running program: %w", err)
	}
	return func() *exec.Cmd { return exec.Command(exe, args...) }, nil
}

// child is a started child process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at EOF
	stderr bytes.Buffer
	waited chan struct{}
	err    error // of Wait, once waited is closed
}

func startChild(launch Launcher, cfg childConfig) (*child, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	c := &child{cmd: launch(), lines: make(chan string, 64), waited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), EnvChild+"="+string(raw))
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("torture: start child: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	})
	go func() {
		wg.Wait() // stdout is read to EOF before Wait closes it
		c.err = c.cmd.Wait()
		close(c.waited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.waited
}

// failure describes how a child failed, with its stderr.
func (c *child) failure() error {
	msg := strings.TrimSpace(c.stderr.String())
	if msg == "" {
		return fmt.Errorf("child %d: %v", c.pid(), c.err)
	}
	return fmt.Errorf("child %d: %v: %s", c.pid(), c.err, msg)
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
	lines := c.lines
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil // EOF; wait for the exit
				continue
			}
			if strings.HasPrefix(line, "armed ") {
				c.kill()
				return true, stats, nil
			}
			if s, ok := parseStats(line); ok {
				stats = s
			}
		case <-fire:
			c.kill()
			return true, stats, nil
		case <-c.waited:
			if lines != nil {
				for line := range lines { // the rest of stdout; closed before waited
					if s, ok := parseStats(line); ok {
						stats = s
					}
				}
			}
			if c.err != nil {
				return false, stats, c.failure()
			}
			return false, stats, nil
		case <-limit.C:
			c.kill()
			return true, stats, fmt.Errorf("%w after %v", errTimeout, timeout)
		case <-ctx.Done():
			c.kill()
			return true, stats, ctx.Err()
		}
	}
}
