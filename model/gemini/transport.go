package gemini

import (
	"context"
	"net/http"

	"google.golang.org/genai"
)

// The client hands its errors over without the HTTP response's headers,
// so the adapter reads them itself: [New] makes a client of its own with
// the same configuration, whose HTTP client's transport records the
// status and headers of each response into the exchange the model call
// put in the request's context.

// requestIDHeaders are the response headers read as the request ID, in
// order.
var requestIDHeaders = [...]string{"X-Request-Id", "X-Goog-Request-Id"}

// An exchange records what one model call's last HTTP response said. The
// transport writes it on the goroutine that sends the request, before the
// client returns: the model call reads it after.
type exchange struct {
	status    int
	requestID string
}

type exchangeKey struct{}

// recordingTransport records each response's status and request ID into
// the request context's exchange.
type recordingTransport struct{ base http.RoundTripper }

func (t recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if x, ok := r.Context().Value(exchangeKey{}).(*exchange); ok && res != nil {
		x.status = res.StatusCode
		x.requestID = ""
		for _, h := range requestIDHeaders {
			if id := res.Header.Get(h); id != "" {
				x.requestID = id
				break
			}
		}
	}
	return res, err
}

// recordingClient returns a client configured as c whose transport
// records responses, or c itself when one cannot be made (no HTTP client,
// or a configuration the client refuses to take twice, such as a project
// from the environment with the Gemini API backend): the adapter then
// reports no request ID.
func recordingClient(c *genai.Client) *genai.Client {
	cfg := c.ClientConfig()
	if cfg.HTTPClient == nil {
		return c
	}
	hc := *cfg.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = recordingTransport{base: base}
	cfg.HTTPClient = &hc
	rc, err := genai.NewClient(context.Background(), &cfg)
	if err != nil {
		return c
	}
	return rc
}
