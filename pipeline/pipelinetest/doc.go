// Package pipelinetest provides utilities for testing middleware, as
// net/http/httptest does for HTTP handlers.
//
// A [Recorder] is a terminal handler for every stage (run, turn, model
// call, tool call): put it where the runner's core would be, and it records
// what reached it and answers with a fixed step, response or result.
// [NewTurn] builds a [pipeline.Turn] with a real [state.Run], placed by the
// runner's own code, [NewRunCall] and [NewModelCall] build the other
// stages' requests, and [Wrap] puts a middleware around a recorder on every
// stage. [RoundTrip] passes a run through its checkpoint, as another
// process resuming it sees it, and [Drain] runs a stream to its end, so a
// test runs each case plainly and streamed. An [EffectTool] stands in for
// a tool with an external effect and records each execution, under its
// idempotency key, in a [Ledger]: what a test of crash safety checks.
//
//	func TestMyMiddleware(t *testing.T) {
//		rec := &pipelinetest.Recorder{}
//		h := pipelinetest.Wrap(mymw.Middleware(), rec)
//		turn := pipelinetest.NewTurn(t, pipelinetest.WithResponse(
//			state.ToolCall("fc_1", "call_1", "get_weather", `{"city":"Oslo"}`),
//		))
//		res, err := h.Tool.CallTool(ctx, turn.Calls[0])
//		// ... check res, err and rec.ToolCalls()
//	}
//
// Everything here is safe for concurrent use, so a recorder can sit under
// the parallel tool calls of a real [pipeline.Runner] too.
package pipelinetest
