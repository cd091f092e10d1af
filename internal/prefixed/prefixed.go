// Package prefixed writes and reads length-prefixed fields: a field is
// its length as a uvarint (encoding/binary's), then its bytes. The stores'
// binary rows and sealed heads keep their short fields this way.
package prefixed

import "encoding/binary"

// Append appends s to dst as a field and returns the extended buffer.
func Append[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Cut reads the field at the start of b: its bytes (a slice of b) and
// what follows it. ok is false if b does not start with a whole field
// (a malformed or truncated length, or fewer bytes than it says).
func Cut(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, b, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}
