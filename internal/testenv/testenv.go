// Package testenv is the CI plumbing of turnkit's own tests: where the
// backends' tests find their servers, and when a missing server fails a
// test instead of skipping it.
package testenv

import (
	"os"
	"testing"
)

// ServerURL returns the value of the environment variable env (such as
// TURNKIT_POSTGRES_URL) that points a backend's tests at a server. Without
// it the test is skipped with a message saying how to start the servers,
// unless CI=true or TURNKIT_REQUIRE_BACKENDS=1, where it fails: a green CI
// cannot hide a skipped backend.
func ServerURL(tb testing.TB, env string) string {
	tb.Helper()
	url := os.Getenv(env)
	if url == "" {
		msg := env + ` is not set; start the servers with eval "$(.ci/services start)"`
		if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return url
}
