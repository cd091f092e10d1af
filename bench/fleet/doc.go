// Package fleet simulates a fleet of worker processes serving many
// concurrent sessions with the crash-safe chain, on one backend, and
// measures what the store costs per turn.
//
// [Simulate] starts N worker processes (the running program again, whose
// main calls [ChildMain] first). Each serves its share of M sessions, one
// run at a time per session, in a loop: a run is a few tool turns of a
// scripted model that answers after a fixed latency, then a final
// message, with the checkpointer's middleware persisting through
// [github.com/turnkit/turnkit/middleware/checkpoint.WithSession], the backend's store being both the session
// store and the state store so that each commit saves and appends in one
// SaveAppend. After a warm-up, the workers measure for a window: turns
// and runs per second, the turn latency's p50 and p99, the store's calls
// and round trips and the bytes written per turn, and typed conflicts
// (retried by resuming the run) apart from any other failure.
//
// With [Config.River], on PostgreSQL, the same runs go through River
// (package riverrun) instead: the parent enqueues every session's first
// run as a riverrun job, the worker processes work the jobs with
// riverrun's worker over the same chain and model, and each run that ends
// enqueues its session's next; River's own queries are counted apart
// ([Counters.QueueRoundTrips]).
//
// The command bench/cmd/fleetbench runs the matrix of backends, process
// counts and session counts and writes the table and a plot;
// bench/README.md shows them.
package fleet
