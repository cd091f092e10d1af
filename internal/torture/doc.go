// Package torture is the reliability harness behind the promise of the
// invariants in docs/design.md that nothing is lost, nothing is
// duplicated and no tool runs twice: a kill-and-resume torture loop, a
// multi-process load driver, and the checks both share.
//
// A [Plan] lists runs, each with a script that the torture [Model] plays
// from the run's own state (so a retried model call answers the same step,
// with fresh call IDs as a real model would). Its tools record every
// execution, with the call's idempotency key, in an fsync'd append-only
// [EffectLog]. A [Worker] drives every run of a plan to its end through
// the real middleware (persistence, approval, an output guardrail) on real
// stores (session/sqlite, session/postgres, session/redis), deciding
// pending approvals on resume. Runs hand off between two agents
// ([AgentA], [AgentB]; a resumed run must go on with the agent it was
// handed to), some end at the terminal [ToolFinish], and some have their
// final output (a message, or the finish tool's output) tripped by the
// guardrail: such a run ends with the tripwire, its final message never
// stored, its tool items kept, a finish call's output stored as
// persistence.WithheldOutput.
//
// # How a run checkpoints
//
// The stack checkpoints with the public [checkpoint.Checkpointer]
// (middleware/checkpoint), which keeps each run's checkpoint ahead of its
// session: saved before a response's tools run, before every session
// append, and when the run returns; a run is marked finished before its
// final commit, whose items the checkpoint records. A [Worker] that finds
// a run stalled or finished with its last append lost recovers it with
// [checkpoint.Checkpointer.Resume]; a run paused for approval it decides
// and resumes with approval.Resume.
//
// A crash between a tool's commit and the next save leaves the call open
// in the checkpoint with its output in the session: resume looks the
// output up and does not run the tool again. A crash after a tool ran and
// before its commit makes resume run it again with the same idempotency
// key: the only kind of repeat the checks allow for a call with a side
// effect, and they count it.
//
// Calls of [ToolLookup] are reads: the checkpointer is built with
// [checkpoint.WithRetryableTools] naming them, so it skips its save before
// they run: a response of lookups only is not saved before its tools, and
// one that mixes them with other calls is saved when the first of those
// starts.
// A crash after a lookup ran and before its output was committed then
// leaves a checkpoint without the response: resume asks the model again,
// which answers the same step with new call IDs, and the lookup runs again
// under a new idempotency key. The checks allow exactly that: executions
// of a lookup call that never reached the session, none of them by a
// process that was not killed, in a run whose checkpoint does not hold the
// call ([CheckResult].LostRetryable counts them). A lookup whose output reached
// the session must have it from one of its executions, and the session
// still holds each logical call once, as for every other tool.
//
// # Retention
//
// The generations of [Torture] run in turn with the checkpointer's
// retention [checkpoint.DeleteFinished], [checkpoint.KeepLast](1) and
// [checkpoint.KeepAll], so finished runs' checkpoints are deleted while
// workers are killed ([HookPrune] is just before a delete). Before the
// delete, the stack records the finished checkpoint in an [Archive]; a
// worker takes an archived run without a checkpoint to be done, and
// [CheckArchived] checks it against its archived checkpoint.
//
// # Pops while a run is paused
//
// Each generation's plan also holds a [WithPops] pair in a session of its
// own: a run, then one that starts after it has ended and pauses at a
// transfer. While the second is paused, a worker pops the session
// ([HookPop] after each pop; a worker after a kill pops what is left),
// then loads the run again and decides it: in turn, [PopOwn] pops the
// paused run's own items, and its resume must give the model the input
// the live run had (the torture [Model] refuses any other); [PopHistory]
// also pops the last item of the first run, and the resume must fail with
// state.ErrHistoryChanged before the model is called: the run stays
// paused, no tool of it runs, and the checks expect exactly that.
//
// # Model and tool faults
//
// About a quarter of the model calls of a plan are flaky ([RunSpec.Flaky]):
// the first attempt in a process fails with a retryable error beside a
// partial answer, and the stack's retry middleware (middleware/retry)
// makes the call again; no checkpoint and no session may ever hold the
// partial answer. About a quarter of the lookups are slow
// ([CallSpec.Slow]): they run past their time limit ([LookupTimeout]),
// and the model gets the timeout as the call's output, which names the
// execution, so the checks hold it to the same rules as any output.
//
// # The torture loop
//
// [Torture] starts a child process (a program that calls [ChildMain])
// that drives a plan; it kills it with SIGKILL after a random delay or at
// a random occurrence of a random [Hook] (mid model call, just after a
// tool or a lookup returned, before or after a session append, before or
// after a checkpoint save, mid guardrail check), runs [Check] on the stores and the effect log, and
// starts a fresh child that resumes every unfinished run. The cmd/torture
// program runs it at scale.
package torture
