//go:build !linux

package mcp_test

import "testing"

// waitExit needs a pidfd to wait for a process that the test did not
// start without reaping it; elsewhere the test that needs it is skipped.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	t.Skipf("waiting for process %d to exit needs pidfd_open (Linux)", pid)
}
