package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

// ledger is an MCP server whose "transfer" tool records every call it
// serves with the idempotency key the call carried.
type ledger struct {
	server *sdk.Server
	mu     sync.Mutex
	keys   []any
}

func newLedger() *ledger {
	l := &ledger{server: sdk.NewServer(&sdk.Implementation{Name: "bank", Version: "v0"}, nil)}
	l.server.AddTool(&sdk.Tool{Name: "transfer", Description: "Moves money.", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.keys = append(l.keys, req.Params.Meta[mcp.MetaIdempotencyKey])
			return text("transferred " + string(req.Params.Arguments)), nil
		})
	l.server.AddTool(&sdk.Tool{Name: "balance", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("100"), nil
	})
	return l
}

// worker connects a new toolset to the ledger, as another process would.
func (l *ledger) worker(t *testing.T) *mcp.Toolset {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := l.server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close(); _ = ss.Wait() })
	return connect(t, []mcp.Server{{Name: "bank", Transport: ct}})
}

func (l *ledger) served() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]any(nil), l.keys...)
}

// TestRunWithApproval runs an MCP call through the Runner with persistence
// and approval: the call waits, the state goes through JSON to another
// worker with its own MCP session, the call is approved there and the
// tool runs once, with the run's idempotency key in _meta.
func TestRunWithApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bank := newLedger()
	store := memory.New()
	chain := func() *pipeline.Runner {
		return pipeline.NewRunner(pipeline.WithMiddleware(
			persistence.Middleware(store),
			approval.Require(mcp.FromServers("bank")),
		))
	}

	// Worker 1: the model asks for a transfer and a balance; the transfer
	// waits for a decision.
	ts1 := bank.worker(t)
	a1 := &pipeline.Agent{Name: "teller", Tools: ts1.Tools(), Model: scripted.New(
		scripted.Respond(scripted.Call("transfer", `{"to":"bob","amount":5}`)),
	)}
	res, err := chain().Run(ctx, a1, pipeline.UserInput("pay bob 5"), pipeline.WithSessionID("s1"), pipeline.WithRunID("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() || len(res.Interruptions()) != 1 || res.Interruptions()[0].Tool != "transfer" {
		t.Fatalf("interruptions %+v, want the transfer pending", res.Interruptions())
	}
	if n := len(bank.served()); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}

	// Worker 2: a new MCP session, the checkpoint from JSON, the decision.
	ts2 := bank.worker(t)
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	callID := res.Interruptions()[0].CallID
	if err := run.Approve(callID); err != nil {
		t.Fatal(err)
	}
	a2 := &pipeline.Agent{Name: "teller", Tools: ts2.Tools(), Model: scripted.New(scripted.Reply("done"))}
	res2, err := chain().Resume(ctx, a2, run)
	if err != nil {
		t.Fatal(err)
	}
	if res2.FinalOutput() != "done" {
		t.Errorf("final output %q", res2.FinalOutput())
	}
	keys := bank.served()
	if len(keys) != 1 || keys[0] != "run-1/"+callID {
		t.Fatalf("the tool served %v, want one call with key run-1/%s", keys, callID)
	}
	items, err := store.List(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	outputs := 0
	for _, it := range items {
		if it.Kind() == state.KindToolOutput && it.CallID() == callID {
			outputs++
			if it.Text() != `transferred {"to":"bob","amount":5}` {
				t.Errorf("stored output %q", it.Text())
			}
		}
	}
	if outputs != 1 {
		t.Errorf("the session holds %d outputs for the call, want 1", outputs)
	}

	// Resuming the same checkpoint again, after the run went on from it,
	// is refused as stale before anything runs: the tool does not run
	// again and the model is not asked.
	again, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Approve(callID); err != nil {
		t.Fatal(err)
	}
	m3 := scripted.New(scripted.Reply("done"))
	a3 := &pipeline.Agent{Name: "teller", Tools: ts2.Tools(), Model: m3}
	if _, err := chain().Resume(ctx, a3, again); !errors.Is(err, state.ErrStale) {
		t.Errorf("second resume of the same checkpoint = %v, want an error wrapping state.ErrStale", err)
	}
	if n := len(m3.Calls()); n != 0 {
		t.Errorf("the second resume asked the model %d times, want 0", n)
	}
	if n := len(bank.served()); n != 1 {
		t.Errorf("the tool ran %d times after a second resume of the same checkpoint, want 1", n)
	}
}

func TestServerPolicy(t *testing.T) {
	t.Parallel()
	bank := newLedger()
	ts := bank.worker(t)
	other := pipeline.NewTool(pipeline.ToolSpec{Name: "transfer_local"}, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	tests := []struct {
		name string
		tool pipeline.Tool
		want bool
	}{
		{name: "tool of the server", tool: find(t, ts.Tools(), "transfer"), want: true},
		{name: "another tool of the server", tool: find(t, ts.Tools(), "balance"), want: true},
		{name: "not an MCP tool", tool: other},
	}
	p := mcp.FromServers("bank")
	for _, tt := range tests {
		c := &pipeline.ToolCall{Name: tt.tool.Spec().Name, Tool: tt.tool}
		if got, err := p.NeedsApproval(context.Background(), c); got != tt.want || err != nil {
			t.Errorf("%s: NeedsApproval = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if got, _ := mcp.FromServers("elsewhere").NeedsApproval(context.Background(), &pipeline.ToolCall{Tool: tests[0].tool}); got {
		t.Error("a policy for another server holds the call")
	}
}
