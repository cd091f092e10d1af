package jsonw

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " backslash \ slash /`, "<a & b>", "tab\tnl\ncr\r\b\f\x00\x1f",
		"é 世界 🙂", "bad \xff utf8 \xc3", "line\u2028para\u2029", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a<b>\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}

// TestPlainLenStopsAtEveryByteToEscape places each byte value at each
// position of a word and after it, where the eight-byte test and the tail
// loop read it, and checks that PlainLen stops there exactly when
// encoding/json would not copy the byte as it is.
func TestPlainLenStopsAtEveryByteToEscape(t *testing.T) {
	for c := range 256 {
		asIs := c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
		for at := range 19 {
			s := []byte("abcdefghijklmnopqrs")
			s[at] = byte(c)
			wantLen := at
			if asIs {
				wantLen = len(s)
			}
			if got := PlainLen(s); got != wantLen {
				t.Fatalf("PlainLen with byte %#x at %d = %d, want %d", c, at, got, wantLen)
			}
			if got := PlainLen(string(s)); got != wantLen {
				t.Fatalf("PlainLen(string) with byte %#x at %d = %d, want %d", c, at, got, wantLen)
			}
		}
	}
}

// BenchmarkAppendString writes strings of the shapes a checkpoint and a
// request body hold most: an ID, a sentence, a tool call's arguments
// (JSON, so quotes to escape) and text outside ASCII.
func BenchmarkAppendString(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"id", "call_run_4f3c2a1b9d8e7f6a5b4c3d2e1f0a9b8c_17"},
		{"sentence", "The weather in Paris is sunny with a light breeze from the west, 21 degrees at noon and a clear evening."},
		{"arguments", `{"city":"Paris","units":"celsius","days":3}`},
		{"accents", "Prévisions météo à Paris : ensoleillé, 21 °C à midi."},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.s)))
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = AppendString(buf[:0], c.s)
			}
		})
	}
}

// TestAppendInt checks AppendInt against strconv at and around the one
// digit it appends inline.
func TestAppendInt(t *testing.T) {
	for _, n := range []int64{math.MinInt64, -10, -9, -1, 0, 1, 9, 10, 11, 99, 100, math.MaxInt64} {
		if got, want := string(AppendInt([]byte("x"), n)), "x"+strconv.FormatInt(n, 10); got != want {
			t.Errorf("AppendInt(%d) = %q, want %q", n, got, want)
		}
	}
}
