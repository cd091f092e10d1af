package crossbackend_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// get fetches path from srv and returns the status and body.
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

// TestTraceLinkAndSignature checks the inspector's run page over SQLite
// (two views of one file: as the application writes it, signed, and with
// the keys that verify it): the signature verifies under the right key
// and not under another, and the trace link follows the template. It is
// here, not in inspect, so that a module importing inspect does not get
// SQLite in its go.sum through inspect's tests.
func TestTraceLinkAndSignature(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	key := []byte("0123456789abcdef0123456789abcdef")
	open := func(m []state.MarshalOption, u []state.UnmarshalOption) *sqlite.Store {
		s, err := sqlite.Open(path, sqlite.WithCodec(m, u))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	store := open([]state.MarshalOption{state.WithSigningKey("k1", key)}, nil)
	run := statetest.RunWithStatus(t, "run_signed", "", state.RunPaused)
	run.SetTraceContext(map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if err := store.Save(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		keys map[string][]byte
		want string
	}{
		{"right key", map[string][]byte{"k1": key}, `<td id="signature">verified</td>`},
		{"other key", map[string][]byte{"k1": []byte("another key, not the one it was signed with")}, `<td id="signature">does not verify: `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			verify := open(nil, []state.UnmarshalOption{state.WithVerifyKeys(tt.keys)})
			srv := httptest.NewServer(inspect.New(store, store, inspect.WithVerifyStore(verify),
				inspect.WithTraceURL("https://jaeger.example/trace/{trace_id}?x=1")))
			defer srv.Close()
			code, body := get(t, srv.Client(), srv, "/run?id=run_signed")
			if code != http.StatusOK || !strings.Contains(body, tt.want) {
				t.Errorf("GET /run = %d, want a body with %q:\n%s", code, tt.want, body)
			}
			link := `<a href="https://jaeger.example/trace/0af7651916cd43dd8448eb211c80319c?x=1" rel="noreferrer">0af7651916cd43dd8448eb211c80319c</a>`
			if !strings.Contains(body, link) {
				t.Errorf("run page lacks the trace link %s:\n%s", link, body)
			}
		})
	}
}
