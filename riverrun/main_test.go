package riverrun_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	childMain() // a child process of a multi-process test runs here and exits
	goleak.VerifyTestMain(m,
		// modernc.org/sqlite and pgx keep no goroutines after Close; River's
		// clients are stopped by each test. These are the runtime's own.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}
