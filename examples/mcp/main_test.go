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

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	server, _ := filepath.Abs(filepath.Join("..", "..", defaultServer))
	_, nodeErr := exec.LookPath("node")
	_, serverErr := os.Stat(server)
	if nodeErr != nil || serverErr != nil {
		testenv.Missing(t, fmt.Sprintf("node (%v) or the reference server (%v) is missing; npm ci in tool/mcp/testdata/everything", nodeErr, serverErr))
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, []string{"-server", server}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"tool echo: Echoes back the input string\n",
		"echo -> Echo: hello from turnkit\n",
		"get-tiny-image -> Here's the image you requested: [input_image] The image above is the MCP logo.\n",
		"pending approval: get-sum {\"a\":2,\"b\":3}\n",
		"approved get-sum\n",
		"get-sum -> The sum of 2 and 3 is 5.\n",
		"final: 2 + 3 = 5, and the server sent its logo.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "pending approval") > strings.Index(got, "get-sum ->") {
		t.Errorf("get-sum ran before its approval:\n%s", got)
	}
}
