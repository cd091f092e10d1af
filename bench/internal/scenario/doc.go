// Package scenario holds turnkit's benchmark scenarios: the per-turn cost
// of the bare loop, the [pipeline.Runner] alone and with middleware, at
// growing history sizes, and runs of N turns that the peers (eino's ReAct
// and ADK agents, Genkit, langchaingo, the JS Agents SDK) repeat in the
// nested modules under bench/peers; checkpoints, approvals, the
// crash-safe chain on each backend, and what an MCP tool call costs over
// a function tool.
//
// A [Scenario] is a plain func of a *testing.B, so that `go test -bench`
// (bench/turn_test.go, through [Group]) and the turnbench command
// (bench/cmd/turnbench, through [All] and testing.Benchmark) run the very
// same code. The package is internal to bench/: it is the harness's, not
// part of turnkit's API.
//
// # One turn per iteration
//
// A turn scenario times exactly one turn per b.Loop iteration. The Runner
// runs a long run whose scripted model calls b.Loop at the start of every
// model call, so one iteration is the whole cycle between two model calls:
// the model's answer placed, the tool stage, the outputs recorded, the
// decision, the next turn's setup and its model input. Every
// max(64, h/20) turns the run ends and a fresh one starts from the same
// history of h items with the timer stopped, so the history the model
// sees stays between h and h+2·max(64, h/20) items and the setup (copying
// the history into a new state) is never timed. The bare loop does the
// same.
package scenario
