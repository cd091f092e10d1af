package mcp

import (
	"context"
	"slices"

	"github.com/turnkit/turnkit/pipeline"
)

// A ServerPolicy requires approval of every call to the tools of some MCP
// servers. It satisfies approval.Policy:
//
//	approval.Require(mcp.FromServers("shell"))
//	approval.Require(approval.Any(mcp.FromServers("shell"), approval.ByTool("send_email")))
type ServerPolicy struct {
	servers []string
}

// FromServers returns a policy that requires approval of the calls to the
// tools of the named servers (by [Server].Name). Calls to other tools,
// MCP or not, do not need it.
func FromServers(names ...string) ServerPolicy {
	return ServerPolicy{servers: slices.Clone(names)}
}

// NeedsApproval reports whether c calls a tool of one of the policy's
// servers.
func (p ServerPolicy) NeedsApproval(_ context.Context, c *pipeline.ToolCall) (bool, error) {
	t, ok := c.Tool.(*Tool)
	return ok && slices.Contains(p.servers, t.server), nil
}
