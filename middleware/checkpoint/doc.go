// Package checkpoint keeps a run's checkpoint in a [state.Store] ahead of
// its session, so that a worker can die at any instant (a crash, a
// SIGKILL, a lost node) and any other worker can resume the run from the
// checkpoint with nothing lost, nothing stored twice, and no tool run
// under a new idempotency key.
//
//	// store is a state.Store and a session.Store: session/sqlite, session/postgres, ...
//	cp := checkpoint.New(store, checkpoint.WithSession(store))
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		tracing.Middleware(),
//		cp.Middleware(), // persistence, then the checkpointer inside it
//		approval.Require(approval.ByTool("transfer")),
//		guardrails.Output(noSecrets),
//	))
//	res, err := runner.Run(ctx, agent, input, pipeline.WithRunID(id), pipeline.WithSessionID(sid))
//	// ... the worker dies; on any worker:
//	res, err = cp.Resume(ctx, runner, agent, id)
//
// # Why saving after each Runner call is not enough
//
// A program that saves res.State() when Run or Resume returns has no
// checkpoint for what happened in between, and a crash in between breaks
// it in three ways:
//
//   - A crash while tools run: the checkpoint does not hold the response
//     that asked for them, so resume asks the model again, which answers
//     with new call IDs, and the tool runs again under a new idempotency
//     key: the external system cannot tell it is a retry.
//   - A crash after the final commit: the session holds the final answer,
//     the checkpoint does not know the run finished, so resume asks the
//     model again and the user gets two answers.
//   - A checkpoint that lags the session: the session holds items at
//     positions (Seq) the checkpoint has not reserved; resume reserves
//     them again for a new model response, and its append fails with
//     [session.ErrConflict] (a different item at a stored position).
//
// # What it saves, and when
//
// Each save is a compare-and-swap on the run's version ([state.Store]):
//
//   - claim: the first save of an invocation. A resumed run is claimed
//     before anything runs (so an approved call cannot run on two
//     workers); a new run with its input placed, before its first session
//     append or its first model call (when an input guardrail holds the
//     input until it ruled, guardrails.WithHistory with DropBlockedInput
//     or RedactBlockedInput, the first save after the ruling claims it,
//     so that a blocked input never reaches the store);
//   - tools: when a response's first tool call is about to run, so a call
//     retried after a crash carries the same call ID, hence the same
//     idempotency key ([pipeline.ToolCall.IdempotencyKey]); skipped for
//     calls [WithRetryableTools] names, which may run again under a new one;
//   - append: before every session append (through [WithSession]), so the
//     session never holds an item the checkpoint does not, except a tool
//     output committed while its call is open in the checkpoint, which
//     resume finds in the session and does not run again;
//   - end: when the run returns (final output, interruption or error),
//     even if its context was cancelled.
//
// A turn that decides the final output marks the run finished
// ([pipeline.Turn.ApplyNext]) before its final commit, and that commit's items
// are recorded in the checkpoint (under the extension key
// "turnkit.checkpoint") in the save before it is made. After a crash the
// checkpoint says the run is finished, so no resume asks the model again,
// and [Checkpointer.Resume] completes the commit from the record: exactly
// the items the persistence middleware was appending, nothing it held
// back or dropped. A turn that decides a handoff switches the run's agent
// before its commit in the same way (and back if the commit fails), so a
// resumed run goes on with the agent it handed off to.
//
// The cost is about one save per session append, plus one per response
// with tool calls (none when every call is to a tool that may run again
// under a new call ID, see [WithRetryableTools]), one claim and one at the
// end. A save writes only what
// changed since the last one ([state.Delta]): the items recorded since,
// the run's small mutable part, and the context the run started from once
// per run (a reference to it when it is the session's history), never
// again. So a save's size and cost do
// not depend on the length of the run or its history.
//
// The context a run started from, its session's history, is never copied
// into its checkpoint: the checkpoint refers to it (see
// [state.Run.HistoryRef]), and a resume reads it back from the
// session, or fails with [state.ErrHistoryChanged] if the session no
// longer holds it.
//
// # Retention
//
// A finished run's checkpoint is kept ([KeepAll]) unless [WithRetention]
// says otherwise. The rule: once a run has finished and its final commit
// is in the session (when it returns, or when [Checkpointer.Resume]
// completes a commit a crash cut short), the checkpointer deletes
//
//   - [DeleteFinished]: that run's checkpoint, so what a conversation
//     stores grows with the conversation alone;
//   - [KeepLast](n): the finished runs of its session after the n newest
//     (by first save);
//   - [KeepFor](d): the finished runs of its session that finished more
//     than d ago by the clock of [WithClock], oldest first, up to the
//     first it keeps.
//
// KeepLast and KeepFor find the runs through the store's [state.Lister].
// A paused run, an unfinished one (it failed, was cancelled, or its
// worker died) and a finished one whose final commit a crash cut short
// are never deleted under any retention: their checkpoints are what
// resumes them. Deletes are best effort: one that fails leaves a
// checkpoint for the next finished run to prune, and never fails a run.
// A deleted run's ID is free again; a retention assumes that run IDs are
// not reused while a prune of their session runs.
//
// # Wiring: one store for both
//
// Give the checkpointer the same store value twice, as its state store and
// through [WithSession] as its session store, and the save before each
// append and the append become one transaction:
//
//	store, err := postgres.Open(ctx, url)   // a session.Store and a state.Store
//	cp := checkpoint.New(store, checkpoint.WithSession(store))
//
// The transaction is used when two conditions hold ([Checkpointer.Atomic]
// reports them): the value given to [New] and the value given to
// [WithSession] are the same (== on the interface values: same type, same
// pointer), and that value has the method
//
//	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
//
// which session/sqlite, session/postgres and session/redis have (on a
// Redis Cluster it is two writes in that order; see session/redis). A store you wrap (for metrics, logging, fault
// injection) must be passed to both, and must forward SaveAppend to the
// store inside: a struct that embeds the store's pointer type
// (*postgres.Store) forwards it on its own; one that embeds the
// session.Store or state.Store interface does not, and neither does
// session/faulty. examples/guide/07-crash-safe shows a wrapper that
// forwards it.
//
// Otherwise (two stores, a wrapper without SaveAppend, a memory store)
// each append is a save and then the append, two writes: still correct,
// since the save comes first and a resume finds in the session whatever
// the append wrote, but one more round trip and commit per append.
//
// # Where it goes in the chain
//
// tracing → logging → persistence → checkpoint → approval → guardrails
// ([pipeline.Stack] builds it).
//
//   - Inside persistence: the turn stage must record a final output or a
//     handoff before persistence commits the turn, which it does when the
//     inner stages return. [WithSession] puts the persistence middleware
//     in [Checkpointer.Middleware], outside the checkpointer and writing
//     through it, so that every append is preceded by a save; do not add
//     a second persistence middleware of your own.
//   - Outside approval and the guardrails: their verdicts (a pending call,
//     a rejection, a tripwire) are in the run before it is saved, and a
//     turn stopped by an output tripwire is not marked finished.
//   - Inside tracing and logging, so its saves are part of the run's span
//     and its errors are logged once.
//
// # Conflicts
//
// A save that finds a newer version in the store fails with an error
// wrapping [state.ErrConflict], as a [*SaveError] that says where: another
// worker resumed the run and owns it. The run stops at once: the tool
// call, append or turn the save guarded does not happen, every later save
// of this invocation fails with the same error, and nothing it did after
// its last successful save reaches the session. Stop working on the run;
// do not retry with the state you hold. To take it back, load the
// checkpoint again ([Checkpointer.Resume] does).
//
// A resumed run whose claim finds a newer version is stale: the state
// given to Resume is behind what the run already did (a sibling taken
// from the same result went on, or it was loaded before a newer save).
// Its error matches [state.ErrStale] as well as [state.ErrConflict], and
// nothing ran. The persistence middleware refuses such a state the same
// way, before the claim, when the session already holds what the newer
// state committed.
//
// # Workers
//
// Many stateless workers share the stores. A worker starts a run with
// runner.Run and a run ID (the first save claims the ID; a second worker
// starting the same ID gets [state.ErrConflict] before its model call),
// and recovers one by ID with [Checkpointer.Resume]: it completes the
// final commit of a finished run, and resumes any other. For approvals,
// decide on a loaded checkpoint and call runner.Resume (the checkpointer
// claims it before the approved call runs) or approval.Resume, which does
// the same claim and composes with the checkpointer; or save the decisions
// and let a worker call [Checkpointer.Resume].
//
// The checkpointer cannot tell a dead worker from a slow one: deciding
// that a run's worker is gone (a lease, a queue's visibility timeout) is
// the application's job. If both go on, the first save wins and the other
// worker stops with [state.ErrConflict].
package checkpoint
