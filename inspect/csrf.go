package inspect

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
)

// csrfCookie holds the token a write form must carry back: a random value
// in a SameSite=Strict, HttpOnly cookie, repeated in the form (a double
// submit). A page of another site can neither read the cookie nor make
// the browser send it with a cross-site POST.
const csrfCookie = "turnkit_inspect_csrf"

// csrfToken returns the request's token, setting a new one on w if it has
// none.
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && validToken(c.Value) {
		return c.Value
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails
	tok := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

func validToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// checkCSRF refuses a write from another site (by the browser's
// Sec-Fetch-Site or Origin header, when sent) or without the cookie's
// token in its form.
func checkCSRF(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return ErrCSRF
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return ErrCSRF
		}
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validToken(c.Value) {
		return ErrCSRF
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		return ErrCSRF
	}
	return nil
}

// urlQuery escapes s for a URL's query.
func urlQuery(s string) string { return url.QueryEscape(s) }
