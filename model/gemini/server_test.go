package gemini_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"
)

// A reply is one recorded answer of the fake Gemini API.
type reply struct {
	status int
	file   string // testdata file served as the body (".sse": an event stream)
	body   string // or this body
	// stallAfter, when > 0, writes only the first stallAfter events of an
	// event stream, then waits for the client to go away.
	stallAfter int
	// header holds response headers to send.
	header http.Header
}

// A server stands in for generativelanguage.googleapis.com: it serves the
// replies in order and records each request.
type server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []recorded
}

// recorded is a request the server received.
type recorded struct {
	Path  string
	Query string
	Body  map[string]any
	Raw   string
	// Header holds the request's headers.
	Header http.Header
}

func newServer(t testing.TB, replies ...reply) *server {
	t.Helper()
	s := &server{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := recorded{Path: r.URL.Path, Query: r.URL.RawQuery, Raw: string(raw), Header: r.Header.Clone()}
	_ = json.Unmarshal(raw, &rec.Body)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	if len(s.replies) == 0 {
		s.mu.Unlock()
		http.Error(w, `{"error":{"code":418,"message":"no recorded reply left","status":"FAILED_PRECONDITION"}}`, http.StatusTeapot)
		return
	}
	rep := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()

	body := rep.body
	if rep.file == "by path" { // the plain or the streamed answer, as asked
		rep.file = "text.json"
		if strings.Contains(r.URL.Path, ":streamGenerateContent") {
			rep.file = "text.sse"
		}
	}
	if rep.file != "" {
		b, err := os.ReadFile(filepath.Join("testdata", rep.file))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body = string(b)
	}
	if strings.HasSuffix(rep.file, ".sse") || strings.HasPrefix(body, "data:") {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, vs := range rep.header {
		w.Header()[k] = vs
	}
	if rep.status != 0 {
		w.WriteHeader(rep.status)
	}
	if rep.stallAfter == 0 {
		_, _ = io.WriteString(w, body)
		return
	}
	events := strings.SplitAfter(body, "\r\n\r\n")
	for _, ev := range events[:rep.stallAfter] {
		_, _ = io.WriteString(w, ev)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// client returns a genai client of the Gemini Developer API that talks to
// the server.
func (s *server) client() *genai.Client {
	s.t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  s.srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: s.srv.URL},
	})
	if err != nil {
		s.t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

// got returns the requests received so far.
func (s *server) got() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
