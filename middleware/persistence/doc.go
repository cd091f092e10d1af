// Package persistence provides the session middleware: it stores the
// items of a run in a [session.Store] as the run goes, so that the next run
// of the same session starts from the conversation so far.
//
//	store := memory.New() // or session/sqlite, session/postgres, session/redis
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		persistence.Middleware(store, persistence.WithLimit(200)),
//		approval.Require(approval.ByTool("delete_file")),
//		guardrails.Output(noSecrets),
//	))
//	res, err := runner.Run(ctx, agent, pipeline.UserInput("hello"), pipeline.WithSessionID("user-42"))
//
// # What is stored, and when
//
// A session is a valid prefix of the run at every moment, even right after
// a crash, and always valid model input:
//
//   - the user's input is appended on the run's first turn, before the
//     model is called; when an input guardrail rules on what is kept of
//     a blocked input (guardrails.DropBlockedInput, RedactBlockedInput,
//     through a [pipeline.InputHold]), it is appended once the model stage
//     returned, before any tool commits, as the ruling says;
//   - a tool's call and output are appended as soon as the tool returns,
//     with the earlier items of the same response (a message before the
//     call, reasoning);
//   - the model output of a turn that can end the run (its messages, a
//     terminal tool's call and output) waits for the output guardrails'
//     verdict: kept on a pass, discarded on a tripwire (a terminal tool's
//     output is replaced by [WithheldOutput]);
//   - a call waiting for approval is stored only with its outcome.
//
// Every item lands at its position (Seq), so the session lists a run's
// items in model output order, whatever order they were committed in.
//
// # Ordering
//
// Persistence sits outside approval and the guardrails:
// tracing → logging → persistence → checkpoint → approval → guardrails
// ([pipeline.Stack] builds it). It must see the
// guardrails' verdict (matched with [pipeline.ErrOutputRejected],
// [pipeline.ErrInputRejected] and [pipeline.ErrGuardrailFailed]) before
// it commits a final turn.
//
// # Failures and resume
//
// A failed append returns an [*AppendError]. The run's state already holds
// everything the turn produced (results, approvals, guardrail results,
// usage), so [pipeline.Runner.Resume] continues it: the session gets what it
// is missing, exactly once, and no tool runs twice: before an approved
// call runs on resume, the session is asked whether its output is already
// committed. The state keeps a watermark ([state.Run.SessionWatermark])
// and, only after a rejected, cancelled or failed turn, a small record
// under the extension key "turnkit.persistence".
//
// The history a run read on its first turn is its session's, and the run
// refers to it rather than copying it into its checkpoints
// ([state.Run.HistoryRef]): the session, the number of items, the
// session's write stamp they were read at ([session.History]) and their
// digest. On resume persistence reads the items before the run written
// before that stamp ([session.Store.ListBefore]): exactly the items the
// run started from, whatever later runs, or earlier runs that went on,
// wrote since. A session popped or cleared under a paused run fails the
// resume with [state.ErrHistoryChanged] before anything runs;
// [WithHistoryCopied] copies the history instead.
//
// # Continuation
//
// With [WithContinuation], when a run of a session finishes, persistence
// records where the conversation stands in two marks, each an item of a
// session of its own beside the conversation's (so every [session.Store]
// keeps them, through its ordinary Append and List, and the conversation's
// items stay as they were):
//
//   - the tip mark, in session "<id>#turnkit.tip": the session's last item
//     when the run finished (its run, position and a digest of it), the ID
//     of the run's last model response when that response ends the
//     session (its output is the last thing the session holds), and, when
//     a compaction bounded the run's view, the boundary's ID and how many
//     of the session's last items follow it in the view;
//   - the boundary mark, in session "<id>#turnkit.boundary", written once
//     per compaction: its ID and the items that stand for what it covers
//     (a summary, or the Responses API's compaction item).
//
// Each mark session holds one item, the latest mark: a new one replaces
// it.
//
// On the next run's first turn the tip mark is read (one item, from the
// store's index) and checked against the session: its last item before
// the run must be the one recorded, and still stored at its run and
// position. If so, the run's history is the boundary's items followed by
// only the session's last items the mark counts ([pipeline.View]), and a
// model adapter that chains responses on its server continues from the
// recorded response ([pipeline.Continuation]), sending only the run's own
// items. If not (the session was popped, cleared, or written by a run
// without this option), the marks are ignored and the run reads the
// history as it would without them.
//
// The marks bound what a message costs in what the model is sent, not in
// what the run reads: a chained run still reads its history (the whole
// session, or [WithLimit]'s cut), which the call sends again if the
// server lost the response; a run after a compaction reads only the items
// after the boundary.
package persistence
