package inspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/state/statetest"
)

// Hostile content, stored as a model, a tool or a user could store it.
const (
	hostileText   = `<script>alert("text")</script>`
	hostileArgs   = `{"q":"\" onmouseover=\"alert(1)","u":"javascript:alert(2)"}`
	hostileOutput = `</pre><img src=x onerror=alert(3)>`
	hostileFile   = `"><script>alert(4)</script>.pdf`
	hostileID     = `s"><script>alert(5)</script>`
)

// fixture is a handler over a memory session store and checkpoint store
// holding a hostile session, a paused run and a finished one.
type fixture struct {
	sessions *memory.Store
	runs     *memstore.Store
	paused   *state.Run
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{sessions: memory.New(), runs: memstore.New()}
	ctx := t.Context()
	items := []state.Item{
		state.UserMessage(hostileText).WithSeq(1),
		state.ToolCall("fc_1", "call_1", "search", hostileArgs).WithSeq(2),
		state.ToolOutput("call_1", "search", hostileOutput).WithSeq(3),
		state.UserContent(state.FileData(hostileFile, "data:application/pdf;base64,AAAA"),
			state.ImageURL("javascript:alert(6)", "auto"),
			state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "auto")).WithSeq(4),
	}
	if err := f.sessions.Append(ctx, hostileID, "run_hostile", items); err != nil {
		t.Fatal(err)
	}
	f.paused = statetest.RunWithStatus(t, "run_paused", hostileID, state.RunPaused)
	f.paused.SetTraceContext(map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if err := f.runs.Save(ctx, f.paused); err != nil {
		t.Fatal(err)
	}
	if err := f.runs.Save(ctx, statetest.RunWithStatus(t, "run_done", "", state.RunFinished)); err != nil {
		t.Fatal(err)
	}
	return f
}

// get fetches path from srv with client and returns the status and body.
func get(t *testing.T, c *http.Client, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// unsafe finds markup that would run: a script element, an event
// handler attribute, a javascript: URL in an attribute.
var unsafe = regexp.MustCompile(`(?i)<script|<[^>]*\son[a-z]+=|(href|src|action)="javascript:`)

func TestHostileContentRendersAsText(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(inspect.New(f.sessions, f.runs))
	defer srv.Close()
	for _, path := range []string{
		"/",
		"/?q=" + url.QueryEscape(hostileID[:3]),
		"/session?id=" + url.QueryEscape(hostileID),
		"/runs",
		"/runs?session=" + url.QueryEscape(hostileID),
		"/run?id=run_paused",
	} {
		code, body := get(t, srv.Client(), srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, code, body)
		}
		if m := unsafe.FindString(body); m != "" {
			t.Errorf("GET %s: unescaped markup %q in:\n%s", path, m, body)
		}
	}
	_, body := get(t, srv.Client(), srv, "/session?id="+url.QueryEscape(hostileID))
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;text&#34;)&lt;/script&gt;`, // the message, as text
		`&lt;/pre&gt;&lt;img src=x onerror=alert(3)&gt;`,     // the output, as text
		`&#34;&gt;&lt;script&gt;alert(4)&lt;/script&gt;.pdf`, // the file name, as text
		`<img src="data:image/png;base64,iVBORw0KGgo="`,      // an inline image, shown
		`javascript:alert(6)`,                                // an image URL, named only
	} {
		if !strings.Contains(body, want) {
			t.Errorf("session page lacks %q:\n%s", want, body)
		}
	}
	// The call and its output share a row.
	if !regexp.MustCompile(`(?s)<td class="item">.*call_1.*</td>\s*<td class="output">.*tool_output`).MatchString(body) {
		t.Errorf("the call and its output are not on one row:\n%s", body)
	}
	_, body = get(t, srv.Client(), srv, "/run?id=run_paused")
	if !strings.Contains(body, `<pre>{&#34;amount&#34;:5}</pre>`) {
		t.Errorf("run page lacks the pending call's arguments:\n%s", body)
	}
	if strings.Contains(body, `action="decide"`) {
		t.Errorf("a read-only handler shows a write form:\n%s", body)
	}

	// A run whose ID (and so its call's ID) is hostile, on a page with
	// write forms: the IDs go into hidden inputs' values and links.
	run := statetest.RunWithStatus(t, `r"><script>alert(7)</script>`, hostileID, state.RunPaused)
	if err := f.runs.Save(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewServer(inspect.New(f.sessions, f.runs, inspect.WithWrites(
		func(*http.Request) error { return nil }, func(context.Context, *state.Run) error { return nil })))
	defer w.Close()
	code, body := get(t, w.Client(), w, "/run?id="+url.QueryEscape(run.ID()))
	if code != http.StatusOK || !strings.Contains(body, `action="decide"`) {
		t.Fatalf("GET the hostile run = %d, want 200 with a write form:\n%s", code, body)
	}
	if m := unsafe.FindString(body); m != "" {
		t.Errorf("hostile run page: unescaped markup %q in:\n%s", m, body)
	}
	if !strings.Contains(body, `name="call" value="call_r&#34;&gt;&lt;script&gt;alert(7)&lt;/script&gt;"`) {
		t.Errorf("the hostile call ID is not an escaped attribute value:\n%s", body)
	}
}

func TestPagesAreSafe(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(inspect.New(f.sessions, f.runs))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q allows scripts", csp)
	}
}

// csrfField finds the CSRF token of a page's write form.
var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// post posts form to path and returns the status and body, without
// following a redirect.
func post(t *testing.T, c *http.Client, srv *httptest.Server, path string, form url.Values, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWrites(t *testing.T) {
	const callID = "call_run_paused"
	allow := errors.New("")
	for _, tt := range []struct {
		name      string
		writes    bool
		auth      error // what the authorization hook returns (allow: nil)
		token     string
		header    http.Header
		wantCode  int
		wantText  string
		wantCalls int
	}{
		{name: "read-only", wantCode: http.StatusForbidden, wantText: "writes are disabled"},
		{name: "not authorized", writes: true, auth: errors.New("no operator session"), token: "page",
			wantCode: http.StatusForbidden, wantText: "write not authorized: no operator session"},
		{name: "no token", writes: true, auth: allow, wantCode: http.StatusForbidden, wantText: "cross-site request refused"},
		{name: "wrong token", writes: true, auth: allow, token: strings.Repeat("ab", 32), wantCode: http.StatusForbidden, wantText: "cross-site"},
		{name: "cross-site", writes: true, auth: allow, token: "page", header: http.Header{"Sec-Fetch-Site": {"cross-site"}},
			wantCode: http.StatusForbidden, wantText: "cross-site"},
		{name: "other origin", writes: true, auth: allow, token: "page", header: http.Header{"Origin": {"https://evil.example"}},
			wantCode: http.StatusForbidden, wantText: "cross-site"},
		{name: "approved", writes: true, auth: allow, token: "page", wantCode: http.StatusSeeOther, wantCalls: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var decided []*state.Run
			var opts []inspect.Option
			if tt.writes {
				opts = append(opts, inspect.WithWrites(
					func(*http.Request) error {
						if tt.auth == allow {
							return nil
						}
						return tt.auth
					},
					func(ctx context.Context, run *state.Run) error {
						decided = append(decided, run)
						return f.runs.Save(ctx, run)
					}))
			}
			srv := httptest.NewServer(inspect.New(f.sessions, f.runs, opts...))
			defer srv.Close()
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			_, page := get(t, c, srv, "/run?id=run_paused")
			token := tt.token
			if token == "page" {
				m := csrfField.FindStringSubmatch(page)
				if m == nil {
					t.Fatalf("no write form on the run page:\n%s", page)
				}
				token = m[1]
			}
			form := url.Values{"run": {"run_paused"}, "call": {callID}, "verdict": {"approve"}, "csrf": {token}}
			code, body := post(t, c, srv, "/decide", form, tt.header)
			if code != tt.wantCode || !strings.Contains(body, tt.wantText) {
				t.Fatalf("POST /decide = %d, want %d with %q:\n%s", code, tt.wantCode, tt.wantText, body)
			}
			if len(decided) != tt.wantCalls {
				t.Fatalf("decision hook called %d times, want %d", len(decided), tt.wantCalls)
			}
			stored, err := f.runs.Load(t.Context(), "run_paused")
			if err != nil {
				t.Fatal(err)
			}
			_, _, ok := stored.DecisionFor("refund", callID)
			if ok != (tt.wantCalls == 1) {
				t.Fatalf("stored run decided = %v, want %v", ok, tt.wantCalls == 1)
			}
			if tt.wantCalls == 0 {
				return
			}
			// The page after the redirect shows the decision; a second
			// decision on the call is a conflict.
			_, page = get(t, c, srv, "/run?id=run_paused&notice=x")
			if !strings.Contains(page, "<td>approved</td>") {
				t.Errorf("the run page does not show the decision:\n%s", page)
			}
			code, body = post(t, c, srv, "/decide", form, nil)
			if code != http.StatusConflict || !strings.Contains(body, "already decided") {
				t.Errorf("second POST /decide = %d, want 409 (already decided):\n%s", code, body)
			}
		})
	}
}

func TestWithWritesNeedsHooks(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("WithWrites(nil, decide) did not panic")
		}
	}()
	inspect.WithWrites(nil, func(context.Context, *state.Run) error { return nil })
}

// TestDecideRedirectsUnderItsMount checks that after a decision the
// browser goes back to the run's page under the prefix the handler is
// mounted at (a Location relative to the request).
func TestDecideRedirectsUnderItsMount(t *testing.T) {
	f := newFixture(t)
	h := inspect.New(f.sessions, f.runs, inspect.WithWrites(
		func(*http.Request) error { return nil },
		func(ctx context.Context, run *state.Run) error { return f.runs.Save(ctx, run) }))
	mux := http.NewServeMux()
	mux.Handle("/debug/turnkit/", http.StripPrefix("/debug/turnkit", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	_, page := get(t, c, srv, "/debug/turnkit/run?id=run_paused")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no write form:\n%s", page)
	}
	form := url.Values{"run": {"run_paused"}, "call": {"call_run_paused"}, "verdict": {"approve"}, "csrf": {m[1]}}
	resp, err := c.PostForm(srv.URL+"/debug/turnkit/decide", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/debug/turnkit/run" || resp.Request.URL.Query().Get("id") != "run_paused" {
		t.Fatalf("after the decision: %d at %s, want 200 at /debug/turnkit/run?id=run_paused", resp.StatusCode, resp.Request.URL)
	}
}

// TestPendingElicitation: a call that waits for an answer to its MCP
// server's request shows the server, the message and the schema, as
// text, and offers no approve or reject form even with writes on; the
// answered request and the approval beside it show as before.
func TestPendingElicitation(t *testing.T) {
	f := newFixture(t)
	run := statetest.ElicitingRun(t, "run_elicit")
	if err := f.runs.Save(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	h := inspect.New(f.sessions, f.runs, inspect.WithWrites(
		func(*http.Request) error { return nil },
		func(context.Context, *state.Run) error { return nil }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, body := get(t, srv.Client(), srv, "/run?id=run_elicit")
	if code != http.StatusOK {
		t.Fatalf("GET = %d:\n%s", code, body)
	}
	for _, want := range []string{
		`diner asks: Any allergies?`,
		`<pre class="schema">{&#34;type&#34;:&#34;object&#34;`,
		`waits for an answer`,
		`value="call_pay"`, // the approval beside it keeps its forms
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `name="approve" value="call_book"`) {
		t.Errorf("the call waiting for an answer has an approve form:\n%s", body)
	}
}
