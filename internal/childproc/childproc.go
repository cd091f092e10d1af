// Package childproc starts the worker processes of turnkit's multi-process
// harnesses (internal/torture, bench/fleet, River's benchmarks): the
// running program again, given its configuration as JSON in one
// environment variable, talking back line by line on stdout, with stdin
// left open for the parent to signal it.
package childproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// A Launcher returns the command that starts a child; [Start] adds its
// environment and pipes.
type Launcher func() *exec.Cmd

// Self returns a Launcher of the running executable with args (a test
// binary passes "-test.run=^$" so that it runs no tests).
func Self(args ...string) (Launcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the running program: %w", err)
	}
	return func() *exec.Cmd { return exec.Command(exe, args...) }, nil
}

// A Child is a started child process.
type Child struct {
	Cmd *exec.Cmd
	// Stdin is the child's standard input, open until the parent closes it.
	Stdin io.WriteCloser
	// Lines carries the child's standard output, line by line; it is closed
	// at EOF.
	Lines <-chan string

	stderr bytes.Buffer
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// Start starts the command launch returns, with the JSON of cfg in the
// environment variable env. lineBuffer is how many lines of output may
// wait unread.
func Start(launch Launcher, env string, cfg any, lineBuffer int) (*Child, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the child's configuration: %w", err)
	}
	lines := make(chan string, lineBuffer)
	c := &Child{Cmd: launch(), Lines: lines, done: make(chan struct{})}
	c.Cmd.Env = append(os.Environ(), env+"="+string(raw))
	c.Cmd.Stderr = &c.stderr
	stdout, err := c.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if c.Stdin, err = c.Cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a child process: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<30) // a report line may hold every latency of a run
		for sc.Scan() {
			lines <- sc.Text()
		}
	})
	go func() {
		wg.Wait() // stdout is read to EOF before Wait closes it
		c.err = c.Cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Pid returns the child's process ID.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Done is closed when the child has exited and its output was read.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err returns how the child exited (nil: with status 0). Call it once
// Done is closed.
func (c *Child) Err() error { return c.err }

// Kill sends SIGKILL if the child still runs, and waits for it to end.
func (c *Child) Kill() {
	select {
	case <-c.done:
	default:
		_ = c.Cmd.Process.Kill()
		<-c.done
	}
}

// Failure waits for the child to end and describes how it failed, with
// its stderr: what names it ("child", "worker process").
func (c *Child) Failure(what string) error {
	<-c.done
	msg := strings.TrimSpace(c.stderr.String())
	if msg == "" {
		return fmt.Errorf("%s %d: %v", what, c.Pid(), c.err)
	}
	return fmt.Errorf("%s %d: %v: %s", what, c.Pid(), c.err, msg)
}

// Stderr returns what the child wrote to stderr. Call it once Done is
// closed.
func (c *Child) Stderr() string { return c.stderr.String() }
