// Package peers is the nested module of turnkit's benchmark peers: the
// libraries turnkit is compared with, in a module of their own so that
// turnkit itself never depends on them. Every peer runs turnkit's run
// scenario (run/runner/turns=N in bench/internal/scenario, BenchmarkRun in
// bench): a user message, N turns that each make one model call answered
// by one call to a trivial tool, then a final message, on a fake model of
// the peer's own model interface.
//
//   - eino/: github.com/cloudwego/eino's ReAct agent and its ADK
//     ChatModelAgent run by adk.Runner (cmd/einobench prints their figures
//     as JSON lines, -agent adk for the ADK agent).
//   - genkit/: Firebase Genkit for Go, a module of its own
//     (genkit/cmd/genkitbench).
//   - langchaingo/: langchaingo's agent executor, a module of its own
//     (langchaingo/cmd/langchaingobench).
//   - js/: the JS Agents SDK, @openai/agents, run by node (js/bench.mjs).
//
// genkit and langchaingo have modules of their own so that their large
// dependency graphs move neither eino's versions nor each other's.
// bench/cmd/turnbench, in the bench module, drives them all and puts them in
// one table with turnkit.
package peers
