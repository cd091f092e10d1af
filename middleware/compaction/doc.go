// Package compaction provides middleware that keeps what the model sees of
// a long conversation bounded, while the session keeps every item.
//
// When a model call's input passes a threshold (in items, or in tokens
// estimated from its JSON), the middleware cuts it in two: a head, which a
// [Compactor] replaces with fewer items, and the most recent items, kept
// as they are. The model sees the compactor's items followed by the kept
// ones, and so does every call after it, and every later run of the
// session:
//
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		tracing.Middleware(),
//		persistence.Middleware(store, persistence.WithContinuation()),
//		compaction.Middleware(compaction.Summarize(summarizer), compaction.WithMaxTokens(8000)),
//		approval.Require(policy),
//		guardrails.Output(check),
//	))
//
// Two compactors come with turnkit: [Summarize], a summary written by any
// [pipeline.Model] (so it works on Chat Completions and on the scripted
// model), and model/openai's Model.Compact, the Responses API's own
// compaction, whose compaction item is kept, replayed and checkpointed like
// any item.
//
// # Where the boundary lives
//
// The cut is recorded in the run's state as a [pipeline.View]: the
// compactor's items and the position of the model input they stand for.
// The core applies it to every model call, so a checkpoint resumes in any
// process with exactly the model input the live run had, a paused approval
// included. With the persistence middleware's WithContinuation, a finished
// run's view is recorded beside its session, and the next run reads only
// the items after the boundary: it starts from the compactor's items and
// does not summarise again.
//
// A boundary never splits a call from its output (a kept output keeps its
// call, and a kept item keeps the reasoning before it). A call that waits
// for approval is not in any model input until it has its outcome, so a
// pending approval stays with its call.
//
// # Ordering
//
// Put compaction inside persistence and outside approval and the
// guardrails: the model-stage guardrails then check what the model sees,
// and tracing, which records the call where the core makes it, records the
// compacted input. A logging middleware outside compaction logs the input
// size before the cut on the call that compacts.
package compaction
