// Package inspect serves a read-mostly web view of what turnkit stores,
// as net/http/pprof and expvar do: an [http.Handler] the application
// mounts, over any [session.Store] and [state.Store].
//
//	h := inspect.New(store, store,
//		inspect.WithTraceURL("https://jaeger.example/trace/{trace_id}"))
//	mux.Handle("/debug/turnkit/", http.StripPrefix("/debug/turnkit", h))
//
// It shows the sessions (newest first, paged, searched by ID prefix, when
// the session store implements [session.Lister]), a session's timeline a
// page at a time (each tool call beside its output, hosted calls with
// their status, content parts: inline images shown, files named), the
// runs by status and session (when the state store implements
// [state.Lister]), and a run's checkpoint: turn, agent, pending approvals
// with their arguments, decisions, guardrail verdicts, usage, whether its
// signature verifies ([WithVerifyStore]) and a link to its trace
// ([WithTraceURL]).
//
// # Safety
//
// The handler is read-only unless [WithWrites] is given, which requires
// an authorization hook, called on every write, and a decision hook, which
// does what follows a decision (resume the run in-process, enqueue it);
// the handler records the decision on the run and hands it over, and
// never runs a tool itself. Write forms carry a CSRF token bound to a
// SameSite=Strict cookie, and cross-site POSTs are refused. Every page is
// rendered with html/template, so stored content (messages, tool
// arguments and outputs, file names) is escaped as text; a [Redactor]
// ([WithRedactor]) can mask payloads before they are shown. Pages load no
// script and no external asset (a Content-Security-Policy says so), so the
// view works offline; each page is one request.
//
// # Paging
//
// A session's timeline is read a page at a time from the store's index
// when the session store implements [session.Pager]; otherwise each page
// reads the whole session (List) and shows a slice of it.
package inspect
