// Package riverrun runs turnkit runs as jobs of River
// (github.com/riverqueue/river), the job queue on PostgreSQL, or on SQLite
// on one machine: River decides who runs which run, retries it with
// backoff, rescues the job of a dead worker, and cancels it; the
// checkpointer (middleware/checkpoint) makes every attempt take the run on
// from where the last one stopped.
//
// riverrun is a module of its own, github.com/turnkit/turnkit/riverrun, so
// that River's version (River ships breaking changes in minor releases)
// is a requirement of riverrun's users only, not of every turnkit user.
//
//	// store: session/postgres or session/sqlite, a state.Store and a session.Store
//	cp := checkpoint.New(store, checkpoint.WithSession(store))
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		cp.Middleware(), // persistence, with the checkpointer inside it
//		approval.Require(approval.ByTool("transfer")),
//	))
//	workers := river.NewWorkers()
//	river.AddWorker(workers, riverrun.NewWorker(runner, cp, riverrun.NewRegistry(agent)))
//	rc, _ := river.NewClient(riverpgxv5.New(pool), &river.Config{Workers: workers, Queues: ...})
//	runs := riverrun.NewClient(rc, store)
//	_, err := runs.EnqueueTx(ctx, tx, riverrun.Start{RunID: id, Agent: "support", SessionID: sid, Text: "hi"}, nil)
//
// # Jobs
//
// A run is a job of kind [Kind] with [RunArgs]: the run ID, the starting
// agent's name (workers look agents up in a [Registry]: jobs carry names,
// not values), the session ID and the input. Jobs are unique per run ID
// (and resume version), so enqueueing a run twice enqueues it once;
// [Client.EnqueueTx] enqueues it in the caller's transaction.
//
// [Worker.Work] looks at the run's checkpoint first, so every attempt of
// every job does the right thing: it starts a new run, completes a
// finished one (its final commit, if a crash cut it short; the model is
// not asked again), completes the job of a run paused for a decision,
// and resumes any other with checkpoint.Checkpointer.Resume: a rescued
// job (its worker died) runs an open call again under its own idempotency
// key, unless the session holds its output.
//
// # Errors and retries
//
// A retryable *pipeline.ModelError (429, 5xx), a failed read or write of
// the checkpoint or the session (the store's I/O), state.ErrConflict and
// the job's context ending (timeout, shutdown) make the attempt return its
// error, and River retries with backoff; the checkpointer makes every
// retry safe. Any other error (a tripwire, max turns, a checkpoint that
// does not decode, an unknown agent) cancels the job with river.JobCancel:
// it is recorded in the job's errors and never retried. Every attempt records an
// [Output] (river.RecordOutput): the final output, the pending calls, or
// the error. [WithRetryable] adds transient errors of your own.
//
// state.ErrConflict means another worker saved the run first and owns it
// (a job rescued while its worker was in fact alive, a resume racing
// another): the loser stops with nothing more stored, and its job retries;
// its next attempt finds the run finished or paused (and completes) or
// abandoned (and resumes it).
//
// # Approvals
//
// An interrupted run's job completes with its pending calls in its
// [Output]; [Client.Pending] lists them from the checkpoint. [Client.Decide],
// in any process, saves decisions on the checkpoint and, once every
// pending call has one, enqueues the resume job. A decision on a call that
// was decided or resumed already, or on a finished run, is refused with a
// [*DecideError].
//
// The checkpoint store's Save does not take the caller's transaction, so
// the decision and the resume job are not one transaction: Decide saves
// first and enqueues second, and a crash in between is recovered by the
// next Decide on the run (a retry, refused with state.ErrAlreadyDecided,
// still enqueues the missing job) or by [Client.EnqueueResume]. The resume
// job is unique per run and checkpoint version, so recovery never
// enqueues it twice. See [Client.Decide].
//
// # Cancellation
//
// [Client.Cancel] cancels a run's jobs; River cancels the context of a
// running one. The run stops at its next blocking point, the checkpointer
// saves it as far as it got (its end save outlives the context), and the
// checkpoint stays resumable: [Client.EnqueueResume] takes it on.
//
// # Observability
//
// River's OpenTelemetry middleware (github.com/riverqueue/rivercontrib/otelriver)
// fits as it is, and this package needs nothing of it: give the River
// client otelriver.NewMiddleware with EnableTracePropagation, and put
// tracing.Middleware in the runner's chain. Each job attempt gets a
// "river.work" span, linked to the span that enqueued the job; the run's
// "invoke_agent" span is its child, since [Worker.Work] runs the run in
// the attempt's context; and a run resumed after an approval links to the
// trace it paused in (the tracing middleware's doing).
//
// Logs go through zap, twice over and from one logger: the runs' through
// the logging middleware in the runner's chain (run finished, approval
// requested, tool errors, with run and call IDs), and River's own (job
// failures and retries, rescues, client start and stop) through its
// Config.Logger, a log/slog logger that go.uber.org/zap/exp/zapslog backs
// with the zap logger's core. The worker logs nothing itself: every error
// it sees it returns to River, which records it on the job and logs it
// once. examples/workers wires both. The job's outcome is in its [Output]
// and, for failures, in River's job errors.
//
// # Setting up River: migrations
//
// riverrun does not create River's tables. Run River's migrations as a
// step of their own before the first client starts, with the migration
// tool of the River version riverrun's go.mod requires (rivermigrate, as
// examples/workers does, or the river command's migrate-up):
//
//	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
//	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
//
// turnkit's own tables (sessions and checkpoints) are another matter: the
// session stores create and migrate theirs when they open (see
// session/postgres.Open and its WithoutMigrations).
//
// # Erasing a session
//
// A start job's arguments hold the run's input in the clear, and a job's
// recorded [Output] and errors can hold what the model and the tools
// said. Erasing a session's data (session/encrypt's Erase) therefore has
// a River part, [Client.Erase], which deletes the session's jobs in every
// state and says how many; call it first, then erase the stores:
//
//	jobs, err := runs.Erase(ctx, sessionID)
//	rep, err := store.Erase(ctx, sessionID, encrypt.Shred())
//
// # How fast a dead worker's run comes back
//
// A worker that dies (SIGKILL, a lost node) leaves its job running in
// River's table. River's rescuer, a maintenance service of the elected
// leader among the clients that work jobs, looks for stuck jobs every 30
// seconds, an interval River fixes (it is not in river.Config), and takes
// a job for stuck once it has run longer than river.Config's
// RescueStuckJobsAfter: one hour by default, or JobTimeout plus one hour
// when JobTimeout is longer. It then schedules the job's retry by the
// client's retry policy. So a dead worker's run resumes on another worker
// after RescueStuckJobsAfter, plus up to 30 s, plus the retry's backoff.
// To bring runs back sooner, lower RescueStuckJobsAfter to a little above
// the longest run attempt you allow, and keep the attempt's timeout
// ([WithTimeout] or JobTimeout) below it, so that a live attempt stops
// before its job is handed to another worker. Should both go on, the
// checkpoint's compare-and-swap lets one win (state.ErrConflict for the
// other): a rescue that came too early costs an attempt, and at worst a
// tool call that was running on the loser runs on both, under the same
// idempotency key, which a service that honours the key recognises.
//
// # Module
//
// riverrun is a module of its own (see above) and imports no River
// driver: it is generic over the driver's transaction type, so pgx enters
// a build only with riverpgxv5, and SQLite only with riversqlite, both
// chosen by the caller. Its tests run against the real PostgreSQL (CI sets
// TURNKIT_POSTGRES_URL) and reuse the reliability harness in
// internal/torture.
package riverrun
