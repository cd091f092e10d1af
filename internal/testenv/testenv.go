// Package testenv is the CI plumbing of turnkit's own tests: where the
// backends' tests find their servers, and when a missing server fails a
// test instead of skipping it.
package testenv

import (
	"os"
	"testing"
)

// Required reports whether a missing server or tool must fail a test
// rather than skip it: when CI is set (to anything but "false" or "0")
// or TURNKIT_REQUIRE_BACKENDS=1. A green CI cannot hide a skipped backend.
func Required() bool {
	ci := os.Getenv("CI")
	return ci != "" && ci != "false" && ci != "0" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1"
}

// Missing ends a test that lacks what it needs (a server, node, the MCP
// reference server): it fails with msg when [Required], and is skipped
// with msg otherwise.
func Missing(tb testing.TB, msg string) {
	tb.Helper()
	if Required() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// ServerURL returns the value of the environment variable env (such as
// TURNKIT_POSTGRES_URL) that points a backend's tests at a server. Without
// it the test is skipped with a message saying how to start the servers,
// or fails when [Required].
func ServerURL(tb testing.TB, env string) string {
	tb.Helper()
	url := os.Getenv(env)
	if url == "" {
		Missing(tb, env+` is not set; start the servers with eval "$(.ci/services start)"`)
	}
	return url
}
