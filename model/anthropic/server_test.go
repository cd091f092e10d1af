package anthropic_test

import (
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/turnkit/turnkit/internal/providerfake"
)

// messageEvents turns a recorded Messages API response into the event
// stream the API sends for it (providerfake.MessageEvents).
var messageEvents = providerfake.MessageEvents

// A fakeServer answers Messages API requests with testdata files in
// order, as a stream when the request asks for one, and records the
// request bodies.
type fakeServer struct{ *providerfake.Server }

func newFakeServer(t testing.TB, files ...string) *fakeServer {
	t.Helper()
	return &fakeServer{providerfake.Messages(t, "testdata", files...)}
}

func (s *fakeServer) client() sdk.Client { return clientAt(s.URL, s.Client()) }

func (s *fakeServer) bodies() [][]byte { return s.Bodies() }
