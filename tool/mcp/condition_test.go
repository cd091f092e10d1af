package mcp_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

// A server's condition enables all its tools at once: on a turn it says
// no, none is offered, and a call to one never reaches the server.
func TestServerEnabled(t *testing.T) {
	t.Parallel()
	bank := newLedger()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := bank.server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close(); _ = ss.Wait() })
	var open atomic.Bool
	ts := connect(t, []mcp.Server{{Name: "bank", Transport: ct, Enabled: func(context.Context, *pipeline.Turn) bool { return open.Load() }}})

	m := scripted.New(scripted.CallTool("transfer", `{"amount":1}`), scripted.Reply("closed"))
	agent := &pipeline.Agent{Name: "teller", Model: m, Tools: ts.Tools()}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("pay"))
	if err != nil || res.FinalOutput() != "closed" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	if got := m.Calls()[0].Tools; len(got) != 0 {
		t.Errorf("offered %v while the server is disabled", got)
	}
	if n := len(bank.served()); n != 0 {
		t.Errorf("the server served %d calls while disabled", n)
	}
	out := res.NewItems()[2]
	if out.Kind() != state.KindToolOutput || !strings.Contains(out.Text(), "disabled on this turn") {
		t.Errorf("output = %v", out)
	}

	open.Store(true)
	m2 := scripted.New(scripted.CallTool("transfer", `{"amount":1}`), scripted.Reply("paid"))
	agent.Model = m2
	if _, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("pay")); err != nil {
		t.Fatal(err)
	}
	if got := m2.Calls()[0].Tools; len(got) != 2 {
		t.Errorf("offered %v while enabled, want both tools", got)
	}
	if n := len(bank.served()); n != 1 {
		t.Errorf("the server served %d calls, want 1", n)
	}
}

// A server's own Timeout bounds its calls; without one, the runner's
// default applies.
func TestServerTimeoutOverridesTheRunnersDefault(t *testing.T) {
	t.Parallel()
	bank := newLedger()
	tools := func(timeout time.Duration) []pipeline.Tool {
		st, ct := sdk.NewInMemoryTransports()
		ss, err := bank.server.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close(); _ = ss.Wait() })
		return connect(t, []mcp.Server{{Name: "bank", Transport: ct, Timeout: timeout}}).Tools()
	}
	for _, tc := range []struct {
		timeout time.Duration
		want    time.Duration
	}{{timeout: time.Minute, want: -1}, {timeout: 0, want: 0}} {
		for _, tl := range tools(tc.timeout) {
			tt, ok := tl.(pipeline.TimeoutTool)
			if !ok || tt.Timeout() != tc.want {
				t.Errorf("server timeout %v: tool %s Timeout() = %v, want %v", tc.timeout, tl.Spec().Name, tt.Timeout(), tc.want)
			}
		}
	}
}
