// Package approval holds tool calls for a human decision: the run pauses,
// its state is saved anywhere, a person approves or rejects, and the run
// resumes — in the same process or another one.
//
// [Require] is tool-stage middleware. A call that needs approval (by the
// [Policy], or because its tool is a [pipeline.ApprovalRequirer]) and has
// no decision does not run: the turn ends with the call pending, while the
// other calls of the same response run. The run's [pipeline.Result] lists
// the pending calls as Interruptions (detached copies).
//
// Decisions are made on the run's state, by call ID or for a whole tool:
// [state.Run.Approve], [state.Run.Reject], [state.Run.ApproveAlways],
// [state.Run.RejectAlways]. An exact decision beats an "always" one, and it
// binds to the fingerprint of the arguments it saw: a checkpoint whose
// arguments changed afterwards fails with [state.ErrArgumentsChanged]
// before the tool runs. A rejected call never runs; the model receives the
// rejection message ([DefaultRejection] unless the decision has one, or a
// [Formatter] says otherwise).
//
// # The cycle
//
//	res, _ := runner.Run(ctx, agent, pipeline.UserInput("clean up /tmp"))
//	if res.Interrupted() {
//		data, _ := state.Marshal(res.State())       // store it anywhere
//		// ... later, in any process ...
//		run, _ := state.Unmarshal(data)
//		_ = run.Approve(res.Interruptions()[0].CallID) // or Reject(id, "why")
//		res, _ = runner.Resume(ctx, agent, run)
//	}
//
// With several workers, keep checkpoints in a [state.Store] and use
// [Resume]: Load → decide → Resume saves with compare-and-swap before any
// tool runs, so of two workers resuming the same checkpoint exactly one
// goes on and the other gets [state.ErrConflict]. A worker that loads the
// checkpoint after the other saved its decision fails to decide the call
// ([state.Run.Approve], [state.Run.Reject]) with an error matching both
// [state.ErrAlreadyDecided] and [state.ErrConflict].
//
// # Approvals the tools ask for: Require(nil)
//
// A nil policy is allowed: Require(nil) holds only the calls whose tool
// asks for approval itself (a [pipeline.ApprovalRequirer]): a
// tool.Func made with tool.NeedsApproval or tool.NeedsApprovalFunc, and a
// remote MCP server declared with openai.MCP whose require_approval makes
// the server ask (its approval request always needs a decision). Without
// any approval stage in the chain such a request is rejected, failing
// closed, and the model is told why; so an agent with a remote MCP server
// that asks for approval needs Require in its chain, with a nil policy if
// nothing else needs one.
//
// # Names
//
// An interruption (a [state.Approval] in res.Interruptions()) and a
// decision name the call's tool as the model called it, which is what
// [ByTool] matches:
//
//   - a function tool: its name ("delete_file");
//   - a tool of an MCP server connected with tool/mcp: its name as offered
//     to the model ("<server>_<tool>" with mcp.WithServerPrefix);
//     mcp.FromServers("bank") matches every tool of a server;
//   - a remote MCP server's approval request (an item of kind
//     [state.KindMCPApprovalRequest]): "mcp:<server>/<tool>", which
//     [state.MCPApprovalName] builds and [state.SplitMCPApprovalName]
//     splits; ApproveAlways on that name covers the server's tool.
//
// # Ordering
//
// Place approval outside the tool guardrails: a held or rejected call then
// never reaches them nor the tool, and a tool guardrail runs once, when the
// call executes.
//
// # Agents as tools
//
// An agent used as a tool ([pipeline.AgentTool]) runs with the same chain:
// an approval inside it surfaces on the outer run with
// [state.Approval.Owner] set and a qualified call ID; decide on the outer
// state and resume it.
package approval
