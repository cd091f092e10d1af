// Package state is the durable state of an agent run: the one value a
// checkpoint saves and a resume restores, that is its items with their
// positions, the current agent and turn, usage, pending approvals and the
// decisions on them, guardrail results, and the bookkeeping persistence
// and tracing keep across a pause.
//
// Everything here serves that value: the item model it is made of, the
// run that holds it under one lock, and its encodings (the whole
// checkpoint, [Marshal], and the change since the last save, [Run.Delta]),
// which read its unexported parts under that lock. Keeping it is other
// packages' job: package state/storage is the protocol a checkpoint store
// implements, and memstore, filestore and the session stores keep it. It
// imports no other public turnkit package: everything else builds on it.
//
// # Items and positions
//
// An [Item] is an immutable value. Each gets its position (Seq) once, when
// the run records it: the items of a model response in the order the model
// produced them, then the outputs of its calls in call order. Positions are
// reserved before the calls run, so an output decided later (after an
// approval) still lands at its original position.
//
// # Item kinds
//
// [Item.Kind] says what an item is; the constants are of type [Kind], and
// [Kind.String] gives the stable name a checkpoint and a session store
// write:
//
//   - [KindUserMessage], [KindAssistantMessage], [KindSystemMessage]:
//     messages ("user_message", "assistant_message", "system_message");
//   - [KindReasoning]: the model's reasoning ("reasoning");
//   - [KindToolCall], [KindToolOutput]: a function call and its output
//     ("tool_call", "tool_output");
//   - [KindHandoffCall], [KindHandoffOutput]: a handoff to another agent
//     and its acknowledgement;
//   - [KindCustomCall], [KindCustomOutput]: a custom tool's call (freeform
//     text in) and its output;
//   - [KindHostedCall]: a call of a tool the API runs (web search, file
//     search, code interpreter, a remote MCP call ...), with its status;
//   - [KindMCPApprovalRequest], [KindMCPApprovalResponse]: a remote MCP
//     server's request to approve a call, and the answer;
//   - [KindOpaque]: an item of a type turnkit does not interpret, kept
//     and replayed as the model sent it.
//
// [Kind.IsCall] and [Kind.IsOutput] group the calls and their outputs.
//
// # MCP approval names
//
// A remote MCP server's approval request is a call named
// "mcp:<server>/<tool>": [MCPApprovalName] builds the name and
// [SplitMCPApprovalName] takes it apart. Interruptions, decisions and
// approval policies see that name.
//
// # MCP elicitation
//
// A local MCP server (package tool/mcp) may ask the user for input while
// its tool runs. A run paused on such a request has a pending [Approval]
// whose Elicitation holds the server, the message and the requested
// schema; [Run.AnswerElicitation] records the answer as a [Decision]
// whose Answer is set, bound to that request, and [Run.ElicitationAnswerFor]
// finds it on resume. Answers are not approvals: [Run.DecisionFor] and
// [Run.Approve] ignore them. The members "elicitation" (of a pending
// approval) and "answer" (of a decision) are written only when set, so
// checkpoints without them are unchanged; a reader older than them
// refuses a checkpoint that has them (an unknown member).
//
// # Copies
//
// Accessors return copies or O(1) immutable views ([Items]); a caller never
// holds anything that aliases a [Run].
//
// # Checkpoints
//
// [Marshal] writes a run as JSON of schema [SchemaName], version
// [SchemaVersion]: every part of it, with positions, so that [Unmarshal] in
// another process returns a run that resumes exactly as the live one would,
// at any turn. The format is pinned by golden files in testdata; a change
// comes with a new version and a migration ([WithMigration]). Unmarshal
// reads every version it has migrations for, refuses newer ones with a
// [*VersionError], and never panics: bad input yields a [*DecodeError] with
// the JSON path. With [WithSigningKey] and [WithVerifyKeys] a checkpoint
// carries an HMAC-SHA256 and any edit is refused with [ErrTampered].
//
// A [Store] keeps checkpoints with compare-and-swap on the version: in
// memory (package state/memstore), in a directory (state/filestore), and
// SQL and Redis ones beside the session stores; package statetest is the
// suite every Store passes. None of them is in this package: this package
// is the run, not its storage. A store does not rewrite the checkpoint on
// every save: [Run.Delta] gives what changed since the version the run was
// loaded or saved at (the new items, the run's small mutable part as a
// head, and the context only when it was replaced), and [Assemble]
// rebuilds the run from what a store kept, so that [Marshal] of a loaded
// run equals [Marshal] of the live one. The head binds the items and the
// context by a digest chain, so with signing on an edited, dropped or
// added item is refused like an edited head. Marshal and Unmarshal stay
// the complete, portable document, for files, links and signing.
//
// A store never changes a run: package state/storage takes the delta,
// has the store's backend write it, and records the save on the run
// (storage.Save); a store written outside turnkit is such a backend. What
// only turnkit's own packages may do to a run (the core's operations, and
// the bookkeeping of the session stores' one-transaction saves) goes
// through one door, internal/runcore, opened with a key ([Core]).
//
// # Listing runs
//
// A [Store] that also implements [Lister] lists the runs it keeps, a page
// at a time, newest first, by status ([RunPaused]: waiting on approvals;
// [RunUnfinished]; [RunFinished]) and by session, so that an operator
// finds what waits for a human without knowing run IDs:
//
//	page, err := store.(state.Lister).ListRuns(ctx, state.RunQuery{Status: state.RunPaused, Limit: 20})
//	// page.Runs: summaries; page.Next: the cursor of the next page.
//
// Each save hands the store the run's [RunSummary] ([Delta].Summary),
// which the stores of this module write to an index in the same atomic
// step as the save (filestore: around the head's atomic rename, checked
// against the head when read), so a page costs O(its runs). Lister is an
// interface of its own, not a method of Store, so that Stores written
// before it (and wrappers) stay Stores; memstore, filestore and the
// SQLite, PostgreSQL and Redis stores implement it.
//
// # Fast paths
//
// The checkpoint schema is declared once, in an internal package; the
// encoding/json paths decode and encode it, and hand-written fast paths
// read and write the same members (derived from its tags) without
// reflection over the items, giving up to the encoding/json path, the
// reference and the source of every error, on anything unusual. They are
// kept because they pay, even now that a save writes a small delta: on one
// run of BenchmarkMarshal, BenchmarkUnmarshal, BenchmarkCodecReference,
// BenchmarkDeltaAssemble and BenchmarkParseItem (2 shared cores, best of
// 3) at 10 / 100 / 1 000 items, encoding/json alone is 7× / 7× / 8×
// slower to Marshal, 11× / 12× / 16× slower to Unmarshal, 1.8× / 1.8× /
// 2× slower to save one turn ([Run.Delta]), 1.5× / 4.4× / 2.3× slower to
// load ([Assemble], with 9× the allocations at 1 000 items), and 4×
// slower to rebuild an item ([ParseItem]).
package state
