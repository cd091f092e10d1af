package torture_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/torture"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestMain runs the test binary as a torture child when the parent asks
// for one, and otherwise runs the tests with a goroutine leak check.
func TestMain(m *testing.M) {
	torture.ChildMain()
	goleak.VerifyTestMain(m)
}

// launcher starts this test binary as a child that runs no tests.
func launcher(t *testing.T) torture.Launcher {
	t.Helper()
	l, err := torture.SelfLauncher("-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// postgresURL returns TURNKIT_POSTGRES_URL, or skips the test without it
// (fails instead when CI=true or TURNKIT_REQUIRE_BACKENDS=1).
func postgresURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("TURNKIT_POSTGRES_URL")
	if url != "" {
		return url
	}
	if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
		t.Fatal("TURNKIT_POSTGRES_URL is not set; run eval \"$(.ci/services start)\"")
	}
	t.Skip("TURNKIT_POSTGRES_URL is not set; run eval \"$(.ci/services start)\" to run against PostgreSQL")
	return ""
}

// redisURL returns TURNKIT_REDIS_URL, or skips the test without it
// (fails instead when CI=true or TURNKIT_REQUIRE_BACKENDS=1).
func redisURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("TURNKIT_REDIS_URL")
	if url != "" {
		return url
	}
	if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
		t.Fatal("TURNKIT_REDIS_URL is not set; run eval \"$(.ci/services start)\"")
	}
	t.Skip("TURNKIT_REDIS_URL is not set; run eval \"$(.ci/services start)\" to run against Redis")
	return ""
}

func pipelineInput(spec torture.RunSpec) []state.Item { return pipeline.UserInput(spec.Input) }

func withState(run *state.Run) pipeline.RunOption { return pipeline.WithState(run) }
