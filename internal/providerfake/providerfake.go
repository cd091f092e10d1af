// Package providerfake stands in for the model providers' HTTP APIs in
// turnkit's own tests: a Server answers each request with the next of a
// list of recorded payloads and keeps the request bodies. It imports no
// provider SDK, so the tests that share it (model/anthropic's, the
// cross-provider handoffs in internal/crossbackend and in model/gemini's
// module) each make their SDK client over Server.URL.
package providerfake

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// exhausted is the body of the answer to a request past the recorded
// ones, with status 418: an error every provider's SDK reads as one.
const exhausted = `{"type":"error","error":{"type":"invalid_request_error","code":418,"status":"FAILED_PRECONDITION","message":"providerfake: no recorded reply left"}}`

// A Server answers requests with recorded payloads, in order, and records
// the request bodies. Its methods are safe for concurrent use.
type Server struct {
	// URL is the server's base URL, as httptest gives it.
	URL string

	t      testing.TB
	srv    *httptest.Server
	dir    string
	stream func(testing.TB, []byte) []byte

	mu    sync.Mutex
	files []string
	sent  [][]byte
}

// New starts a server that answers the n-th request with the n-th of
// files, read from dir, as application/json, and each request past them
// with a 418 error. It closes when the test ends.
func New(t testing.TB, dir string, files ...string) *Server {
	t.Helper()
	s := &Server{t: t, dir: dir, files: files}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Messages starts a server of Anthropic's Messages API: as New, with a
// request-id header, and a request that asks for a stream ("stream":true)
// gets its recorded message as the event stream MessageEvents writes.
func Messages(t testing.TB, dir string, files ...string) *Server {
	t.Helper()
	s := New(t, dir, files...)
	s.stream = MessageEvents
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Bodies returns the bodies of the requests received so far, in order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.sent...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.sent = append(s.sent, body)
	if len(s.files) == 0 {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, exhausted)
		return
	}
	file := s.files[0]
	s.files = s.files[1:]
	s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(s.dir, file))
	if err != nil {
		s.t.Errorf("providerfake: read the recorded reply: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.stream != nil {
		w.Header().Set("Request-Id", "req_fake")
		if wantsStream(body) {
			w.Header().Set("Content-Type", "text/event-stream")
			data = s.stream(s.t, data)
		}
	}
	_, _ = w.Write(data)
}
