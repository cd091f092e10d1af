package mcp_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// waitExit returns once the process pid has exited, without reaping it
// (the toolset that started it does): a pidfd becomes readable when its
// process ends.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1) // the test's deadline bounds the wait
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		if n == 1 {
			return
		}
	}
}
