// Package bench holds turnkit's benchmarks as ordinary Go benchmarks
// (BenchmarkTurn, BenchmarkRun, BenchmarkMiddleware, BenchmarkCheckpoint,
// BenchmarkApproval, BenchmarkCrashSafe, BenchmarkMCP in turn_test.go); it
// exports nothing. bench/README.md shows the figures and how each is
// measured.
//
//	go test -run '^$' -bench . ./bench
//	go run ./bench/cmd/turnbench
//
// # The tree
//
//   - internal/scenario: the scenarios themselves, plain funcs of a
//     *testing.B, so that go test -bench (here) and turnbench (through
//     testing.Benchmark) run the very same code; internal, so nothing
//     outside bench/ depends on it.
//   - cmd/turnbench: runs every scenario, the session backends' own
//     BenchmarkAppend and the peers, and writes one table with each
//     figure's ratio to its baseline (results/).
//   - peers: nested modules, outside ./..., with the libraries turnkit is
//     compared with (eino, Genkit, langchaingo, the JS Agents SDK), each
//     running the whole-run scenario on a fake model of its own.
//   - fleet and cmd/fleetbench: many worker processes serving many
//     sessions on one backend; cmd/riverbench: runs as River jobs on
//     PostgreSQL.
package bench
