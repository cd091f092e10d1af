// Package jsonw writes JSON by hand, byte for byte as encoding/json writes
// the same values, for the paths where its reflection costs more than the
// rest of the work: items' canonical JSON in package state, checkpoints,
// and request bodies in the model adapters.
package jsonw

import (
	"math/bits"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string, escaped exactly as
// encoding/json escapes it (HTML-safe, invalid UTF-8 replaced by U+FFFD).
func AppendString(dst []byte, s string) []byte {
	b := append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Runs are short in JSON held in a string (a tool call's
		// arguments): step through a few bytes before PlainLen.
		for n := min(len(s), i+4); i < n && plain[s[i]]; {
			i++
		}
		if i < len(s) && plain[s[i]] {
			i += PlainLen(s[i:])
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Masks of the lowest and the highest bit of each byte of a word.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain marks the bytes a JSON string holds as they are, in
// encoding/json's HTML-safe form: printable ASCII but the quote, the
// backslash, <, > and &.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = false, false, false, false, false
	return t
}()

// PlainLen returns the length of the run of plain bytes at the start of
// s: the bytes a JSON string holds as they are (printable ASCII but the
// quote, the backslash, <, > and &, which encoding/json escapes). The
// writer copies such a run at once and the scanner skips it; both stop
// after it at a byte to escape, to unescape or to check as UTF-8. It reads
// eight bytes at a time: a caller expecting short runs steps through a
// few bytes one at a time before calling it.
func PlainLen[T ~string | ~[]byte](s T) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		if m := special(x); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

// special is not zero when a byte of x is not plain, and then its lowest
// set bit is in the first such byte. Each term tests for a byte of one
// class: it sets the high bit of every byte of its class, and may set it
// in bytes above one (a borrow carried up), never below the first:
// below 0x20 (a borrow through the high bit), the quote or & (0x22,
// 0x26, one bit apart), the backslash, < or > (0x3C, 0x3E), 0x80 and
// above.
func special(x uint64) uint64 {
	control := (x - 0x20*lsb) &^ x
	quoteAmp := (x ^ 0x22*lsb) &^ (0x04 * lsb)
	backslash := x ^ 0x5C*lsb
	angle := (x ^ 0x3C*lsb) &^ (0x02 * lsb)
	return (control | zeroByte(quoteAmp) | zeroByte(backslash) | zeroByte(angle) | x) & msb
}

// zeroByte has the high bit of some byte set when a byte of v is zero
// (and may have it set on other bytes too).
func zeroByte(v uint64) uint64 { return (v - lsb) &^ v }

// AppendField appends a member ,"name":value of an object whose opening
// brace and first member are written; name needs no escaping.
func AppendField(dst []byte, name, value string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return AppendString(dst, value)
}

// AppendInt appends the decimal form of n, as strconv.AppendInt does. Most
// integers a checkpoint writes are counters and positions of one digit
// (a paused run's has twenty-odd): those it appends inline, without
// strconv's call and table.
func AppendInt(dst []byte, n int64) []byte {
	if uint64(n) < 10 {
		return append(dst, '0'+byte(n))
	}
	return strconv.AppendInt(dst, n, 10)
}
