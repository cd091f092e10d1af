package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/testenv"
)

// TestMain runs the approver when the test binary is started as one: the
// assistant starts its own executable, which under go test is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	server, _ := filepath.Abs(filepath.Join("..", "..", defaultServer))
	_, nodeErr := exec.LookPath("node")
	_, serverErr := os.Stat(server)
	if nodeErr != nil || serverErr != nil {
		testenv.Missing(t, fmt.Sprintf("node (%v) or the reference server (%v) is missing; npm ci in tool/mcp/testdata/everything", nodeErr, serverErr))
	}
	db := filepath.Join(t.TempDir(), "support.db")
	for round := range 2 { // a second run of the example starts afresh in the same file
		var out bytes.Buffer
		if err := run(context.Background(), &out, []string{"-db", db, "-server", server}); err != nil {
			t.Fatalf("round %d: run: %v\n%s", round, err, out.String())
		}
		got := out.String()
		for _, want := range []string{
			"  handoff to refunds: order A1, 20 EUR\n",
			"  triage: refund (broken kettle) -> refunds\n",
			"  waiting for approval: refund {\"order\":\"A1\",\"amount\":20}\n",
			"] checkpoint alice-1: refund (broken kettle), order A1, 20 EUR\n",
			"] approved refund {\"order\":\"A1\",\"amount\":20}\n",
			"] refunds: Your refund of 20 EUR for order A1 is on its way.\n",
			"  blocked by guardrail \"input\": card number\n",
			"  triage: faq (returns policy) -> faq\n",
			"  faq: You can return any item within 30 days; refunds take 5 days.\n",
			"session user-alice: 14 items, 0 with a card number\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("round %d: output lacks %q:\n%s", round, want, got)
			}
		}
		if pid := fmt.Sprintf("[approver pid %d]", os.Getpid()); strings.Contains(got, pid) {
			t.Errorf("the approval was decided in this process:\n%s", got)
		}
	}
	files, _ := filepath.Glob(db + "*") // the database, its WAL and shared memory
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("4111 1111 1111 1111")) {
			t.Errorf("%s holds the blocked card number", f)
		}
	}
	if len(files) == 0 {
		t.Fatal("no database file")
	}
}
