package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Handler serves the inspector's pages (see the package doc):
//
//	GET  /                sessions (?q= an ID prefix, ?cursor=)
//	GET  /session?id=     a session's timeline (?cursor= an older page)
//	GET  /runs            runs (?status=paused|unfinished|finished, ?session=, ?cursor=)
//	GET  /run?id=         a run's checkpoint
//	POST /decide          approve or reject a pending call (with [WithWrites])
//
// Links are relative, so the handler may be mounted under any prefix
// with [http.StripPrefix]. It is safe for concurrent use.
type Handler struct {
	sessions session.Store
	runs     state.Store
	cfg      config
	mux      *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// New returns a handler over sessions and runs (often one store that is
// both). A nil store panics; see the options for the rest.
func New(sessions session.Store, runs state.Store, opts ...Option) *Handler {
	if sessions == nil || runs == nil {
		panic("inspect: New called with a nil store")
	}
	h := &Handler{sessions: sessions, runs: runs, cfg: newConfig(opts), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.serveSessions)
	h.mux.HandleFunc("GET /session", h.serveSession)
	h.mux.HandleFunc("GET /runs", h.serveRuns)
	h.mux.HandleFunc("GET /run", h.serveRun)
	h.mux.HandleFunc("POST /decide", h.serveDecide)
	return h
}

// ServeHTTP serves a page; see [Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	// No script, no external asset, no framing; forms post back here only.
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's own form posts, which the CSRF check
	// cannot tell from a cross-site one.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// page is what every page's template gets.
type page struct {
	Title  string
	Nav    string // the current section: "sessions" or "runs"
	Writes bool
	CSRF   string
	Notice string
	Error  string
	Data   any
}

// render writes the named page with status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, nav string, data any) {
	p := page{Title: h.cfg.title, Nav: nav, Writes: h.cfg.decide != nil, Data: data}
	if p.Writes {
		p.CSRF = csrfToken(w, r)
	}
	p.Notice = r.URL.Query().Get("notice")
	h.write(w, status, name, p)
}

// fail writes an error page with status and the error's text.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	p := page{Title: h.cfg.title, Writes: h.cfg.decide != nil, Error: err.Error()}
	h.write(w, status, "error", p)
}

func (h *Handler) write(w http.ResponseWriter, status int, name string, p page) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "inspect: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// statusOf maps an error of a store or a decision to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, state.ErrCursor), errors.Is(err, session.ErrCursor), errors.Is(err, state.ErrUnknownCall):
		return http.StatusBadRequest
	case errors.Is(err, state.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// sessionsData is the sessions page's.
type sessionsData struct {
	Listed bool // the store lists sessions
	Query  string
	IDs    []string
	Next   string
}

func (h *Handler) serveSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := sessionsData{Query: q.Get("q")}
	if l, ok := h.sessions.(session.Lister); ok {
		d.Listed = true
		p, err := l.ListSessions(r.Context(), session.SessionQuery{Prefix: d.Query, Cursor: q.Get("cursor"), Limit: h.cfg.pageSize})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.IDs, d.Next = p.IDs, p.Next
	}
	h.render(w, r, http.StatusOK, "sessions", "sessions", d)
}

// runsData is the runs page's.
type runsData struct {
	Listed  bool // the store lists runs
	Status  string
	Session string
	Runs    []state.RunSummary
	Next    string
}

func (h *Handler) serveRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := runsData{Status: q.Get("status"), Session: q.Get("session")}
	var status state.RunStatus
	if d.Status != "" {
		var ok bool
		if status, ok = state.ParseRunStatus(d.Status); !ok {
			h.fail(w, r, http.StatusBadRequest, fmt.Errorf("inspect: unknown status %q (paused, unfinished or finished)", d.Status))
			return
		}
	}
	if l, ok := h.runs.(state.Lister); ok {
		d.Listed = true
		p, err := l.ListRuns(r.Context(), state.RunQuery{Status: status, SessionID: d.Session, Cursor: q.Get("cursor"), Limit: h.cfg.pageSize})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.Runs, d.Next = p.Runs, p.Next
	}
	h.render(w, r, http.StatusOK, "runs", "runs", d)
}

// timelineData is a session page's.
type timelineData struct {
	ID    string
	Rows  []row
	Next  string // the cursor of the older page
	Paged bool   // read a page at a time from the store's index
}

func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		h.fail(w, r, http.StatusBadRequest, errors.New("inspect: no session ID (?id=)"))
		return
	}
	d := timelineData{ID: id}
	var entries []session.Entry
	if p, ok := h.sessions.(session.Pager); ok {
		d.Paged = true
		pg, err := p.ListPage(r.Context(), id, session.PageQuery{Cursor: q.Get("cursor"), Limit: h.cfg.pageSize})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		entries, d.Next = pg.Entries, pg.Next
	} else {
		items, err := h.sessions.List(r.Context(), id, 0)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		end := len(items)
		if c := q.Get("cursor"); c != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(c, "o"))
			if err != nil || !strings.HasPrefix(c, "o") || n < 0 || n > len(items) {
				h.fail(w, r, http.StatusBadRequest, &session.CursorError{Cursor: c})
				return
			}
			end = n
		}
		from := max(0, end-h.cfg.pageSize)
		for _, it := range items[from:end] {
			entries = append(entries, session.Entry{Item: it})
		}
		if from > 0 {
			d.Next = "o" + strconv.Itoa(from)
		}
	}
	d.Rows = h.rows(entries)
	h.annotate(r.Context(), d.Rows)
	h.render(w, r, http.StatusOK, "session", "sessions", d)
}

func (h *Handler) serveRun(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		h.fail(w, r, http.StatusBadRequest, errors.New("inspect: no run ID (?id=)"))
		return
	}
	run, err := h.runs.Load(r.Context(), id)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	h.render(w, r, http.StatusOK, "run", "runs", h.runView(r.Context(), run))
}

// serveDecide approves or rejects a pending call: writes enabled, the
// CSRF token, the authorization hook, then the decision on the loaded
// run, handed to the decision hook; then back to the run's page.
func (h *Handler) serveDecide(w http.ResponseWriter, r *http.Request) {
	if h.cfg.decide == nil {
		h.fail(w, r, http.StatusForbidden, ErrReadOnly)
		return
	}
	if err := checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, err)
		return
	}
	if err := h.cfg.authorize(r); err != nil {
		h.fail(w, r, http.StatusForbidden, &WriteError{Op: "authorize", Err: fmt.Errorf("%w: %w", ErrUnauthorized, err)})
		return
	}
	runID, callID, verdict, reason := r.PostFormValue("run"), r.PostFormValue("call"), r.PostFormValue("verdict"), r.PostFormValue("reason")
	run, err := h.runs.Load(r.Context(), runID)
	if err != nil {
		h.fail(w, r, statusOf(err), &WriteError{Op: verdict, RunID: runID, CallID: callID, Err: err})
		return
	}
	switch verdict {
	case "approve":
		err = run.Approve(callID)
	case "reject":
		err = run.Reject(callID, reason)
	default:
		h.fail(w, r, http.StatusBadRequest, &WriteError{Op: verdict, RunID: runID, CallID: callID, Err: errors.New("the verdict must be approve or reject")})
		return
	}
	if err == nil {
		err = h.cfg.decide(r.Context(), run)
	}
	if err != nil {
		h.fail(w, r, statusOf(err), &WriteError{Op: verdict, RunID: runID, CallID: callID, Err: err})
		return
	}
	notice := verdict + "d call " + callID
	// A relative Location, resolved by the browser against this request's
	// URL: http.Redirect would resolve it against the path a StripPrefix
	// left, dropping the prefix the handler is mounted under.
	w.Header().Set("Location", "run?id="+urlQuery(runID)+"&notice="+urlQuery(notice))
	w.WriteHeader(http.StatusSeeOther)
}
