// Package peers is the nested module of turnkit's benchmark peers: the
// libraries turnkit is compared with, in a module of their own so that
// turnkit itself never depends on them. Every peer runs the scenario of
// turnkit's bench.RunnerRun: a user message, N turns that each make one
// model call answered by one call to a trivial tool, then a final message,
// on a fake model of the peer's own model interface.
//
//   - eino/: github.com/cloudwego/eino's ReAct agent (cmd/einobench prints
//     its figures as JSON lines).
//   - js/: the JS Agents SDK, @openai/agents, run by node (js/bench.mjs).
//
// bench/cmd/turnbench in the main module drives both and puts them in one
// table with turnkit.
package peers
