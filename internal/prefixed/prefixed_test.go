package prefixed

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendCut(t *testing.T) {
	long := strings.Repeat("x", 300) // a two-byte length
	var b []byte
	for _, s := range []string{"", "a", long} {
		b = Append(b, s)
	}
	b = Append(b, []byte("bytes"))
	rest := b
	for _, want := range []string{"", "a", long, "bytes"} {
		f, r, ok := Cut(rest)
		if !ok || string(f) != want {
			t.Fatalf("Cut = %q, %v; want %q", f, ok, want)
		}
		rest = r
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes left", len(rest))
	}
}

func TestCutRefuses(t *testing.T) {
	whole := Append(nil, strings.Repeat("y", 200))
	for name, b := range map[string][]byte{
		"empty":            nil,
		"length cut short": whole[:1],
		"bytes cut short":  whole[:len(whole)-1],
		"length overflows": bytes.Repeat([]byte{0xff}, 11),
	} {
		if f, rest, ok := Cut(b); ok {
			t.Errorf("%s: Cut = %q, ok; want not ok", name, f)
		} else if !bytes.Equal(rest, b) {
			t.Errorf("%s: rest is not the input", name)
		}
	}
}
