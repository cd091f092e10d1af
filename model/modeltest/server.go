package modeltest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// A Request is one request the model under test sent, as the suite hands
// it to [Harness.Reply].
type Request struct {
	// Case is the case being run, and Turn the index in Case.Turns of the
	// model call this request makes.
	Case *Case
	Turn int
	// Stream reports whether the run streams.
	Stream bool
	// Method, Path and Header are the HTTP request's; Body is its body.
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// A Reply is what the provider answers to one request.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header holds the response headers (Content-Type, the provider's
	// request ID header …).
	Header http.Header
	// Body is the response body: a JSON object, an error body, or a
	// stream of server-sent events.
	Body []byte
	// Hold keeps the connection open after Body until the client goes
	// away, as a provider does while it is still generating.
	Hold bool
}

// A Server is the fake provider a case runs against: an httptest server
// that answers each request with the harness's [Reply] and records the
// request bodies.
type Server struct {
	// URL is the server's base URL, such as "http://127.0.0.1:12345".
	URL string

	srv   *httptest.Server
	t     *testing.T
	c     *Case
	reply func(t *testing.T, r *Request) Reply
	strm  bool

	mu     sync.Mutex
	bodies [][]byte
}

func newServer(t *testing.T, c *Case, stream bool, reply func(t *testing.T, r *Request) Reply) *Server {
	t.Helper()
	s := &Server{t: t, c: c, reply: reply, strm: stream}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client for the server. Its transport keeps no
// idle connection past the test.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Bodies returns copies of the bodies of the requests received so far, in
// order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.bodies))
	for i, b := range s.bodies {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	turn := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if turn >= len(s.c.Turns) {
		s.t.Errorf("modeltest: case %s: request %d, but the case has %d turns", s.c.Name, turn+1, len(s.c.Turns))
		http.Error(w, `{"error":{"message":"modeltest: no turn left"}}`, http.StatusTeapot)
		return
	}
	rp := s.reply(s.t, &Request{
		Case: s.c, Turn: turn, Stream: s.strm,
		Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
	})
	for k, vs := range rp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Length") == "" && !rp.Hold {
		w.Header().Set("Content-Length", strconv.Itoa(len(rp.Body)))
	}
	status := rp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rp.Body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if rp.Hold {
		<-r.Context().Done()
	}
}
