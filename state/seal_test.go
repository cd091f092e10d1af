package state

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"unsafe"
)

// headTests are the heads TestSealedHeadFitsItsRoom and
// TestBinaryHeadFitsItsRoom write.
var headTests = []struct {
	name          string
	runID, sessID string
	version, full int64
}{
	{name: "small", runID: "r", sessID: "s", version: 1, full: 1},
	{name: "no session", runID: "run-1", version: 12, full: 3},
	{name: "largest numbers", runID: "run-1", sessID: "session-1", version: math.MaxInt64, full: math.MaxInt64},
}

// TestSealedHeadFitsItsRoom writes sealed heads into buffers of the room
// Delta.seal makes for them: none grows (a grown buffer is one more
// allocation and copy of every sealed part per save), and each is the
// JSON that openStored reads.
func TestSealedHeadFitsItsRoom(t *testing.T) {
	ct := make([]byte, 200)
	for _, tt := range headTests {
		t.Run(tt.name, func(t *testing.T) {
			room := sealedHeadRoom + len(tt.runID) + len(tt.sessID) + base64.RawStdEncoding.EncodedLen(len(ct))
			buf := make([]byte, 0, room)
			out, head := appendSealedHead(buf, tt.runID, tt.sessID, tt.version, tt.full, ct)
			if cap(out) != room {
				t.Errorf("the buffer grew from %d to %d bytes for a head of %d", room, cap(out), len(head))
			}
			var env sealedHead
			if err := json.Unmarshal(head, &env); err != nil {
				t.Fatalf("head %s: %v", head, err)
			}
			if env.Schema != SealedSchema || env.Run.ID != tt.runID || env.Run.SessionID != tt.sessID || env.Run.Version != tt.version || env.Run.Extension.Delta.Full != tt.full {
				t.Errorf("head %s read back as %+v", head, env)
			}
		})
	}
}

// TestBinaryHeadFitsItsRoom is TestSealedHeadFitsItsRoom for the binary
// head (WithBinaryParts): none grows its buffer, HeadVersions and
// readBinaryHead read its fields back, and a head cut short anywhere
// before its ciphertext is not read as one (openStored fails with
// ErrMalformed).
func TestBinaryHeadFitsItsRoom(t *testing.T) {
	ct := make([]byte, 200)
	for _, tt := range headTests {
		t.Run(tt.name, func(t *testing.T) {
			room := binaryHeadRoom + len(tt.runID) + len(tt.sessID) + len(ct)
			out, head := appendBinaryHead(make([]byte, 0, room), tt.runID, tt.sessID, tt.version, tt.full, ct)
			if cap(out) != room {
				t.Errorf("the buffer grew from %d to %d bytes for a head of %d", room, cap(out), len(head))
			}
			if !isSealedHead(head) {
				t.Errorf("isSealedHead(%q) = false", head)
			}
			rid, sid, version, full, got, ok := readBinaryHead(head)
			if !ok || rid != tt.runID || sid != tt.sessID || version != tt.version || full != tt.full || len(got) != len(ct) {
				t.Errorf("readBinaryHead = %q, %q, %d, %d, %d bytes, %v", rid, sid, version, full, len(got), ok)
			}
			if version, full, err := HeadVersions(head); err != nil || version != tt.version || full != tt.full {
				t.Errorf("HeadVersions = %d, %d, %v", version, full, err)
			}
			clear := len(head) - len(ct)
			for n := 1; n < clear; n++ {
				if _, _, _, _, _, ok := readBinaryHead(head[:n]); ok {
					t.Errorf("the head cut to %d of its %d clear bytes read as a head", n, clear)
				}
				if _, _, _, err := openStored(nil, head[:n], nil, nil); !errors.Is(err, ErrMalformed) {
					t.Errorf("openStored of the head cut to %d bytes = %v, want ErrMalformed", n, err)
				}
			}
		})
	}
}

// flipSealer is a Sealer for tests of the buffers: its ciphertext is the
// plaintext with every byte inverted.
type flipSealer struct{}

func (flipSealer) Seal(dst []byte, _ Part, plaintext []byte) ([]byte, error) {
	for _, c := range plaintext {
		dst = append(dst, ^c)
	}
	return dst, nil
}

func (s flipSealer) Open(dst []byte, p Part, sealed []byte) ([]byte, error) {
	return s.Seal(dst, p, sealed)
}

// TestReleasedBufferServesNextDelta: a sealed delta a store released
// hands its parts' buffer to the next sealed delta, so that a save of a
// store that copies what it writes (session/sqlite) allocates no buffer
// for its parts; a released delta's parts are gone, a second Release and
// a plain delta's change nothing. Checked to fail with Release a no-op.
func TestReleasedBufferServesNextDelta(t *testing.T) { // not parallel: the pool is shared
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	for _, binary := range []bool{true, false} {
		opts := []MarshalOption{WithSealer(flipSealer{})}
		if binary {
			opts = append(opts, WithBinaryParts())
		}
		r := NewRun("run_1", "a")
		r.AddInput(UserMessage("hi"))
		d, err := r.Delta(opts...)
		if err != nil {
			t.Fatal(err)
		}
		buf := unsafe.SliceData(d.Head)
		d.Release()
		d.Release()
		if d.Head != nil || d.Items != nil || d.Context != nil {
			t.Errorf("binary %v: a released delta keeps its parts", binary)
		}
		next, err := r.Delta(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := unsafe.SliceData(next.Head); got != buf {
			t.Errorf("binary %v: the next sealed delta's parts are in a new buffer, not the released one", binary)
		}
		if _, _, _, err := openStored(flipSealer{}, next.Head, next.Context, next.Items); err != nil {
			t.Errorf("binary %v: the delta sealed into a released buffer does not open: %v", binary, err)
		}
		next.Release()
	}
	plain, err := NewRun("run_2", "a").Delta()
	if err != nil {
		t.Fatal(err)
	}
	plain.Release()
	if plain.Head == nil {
		t.Error("Release of a delta that is not sealed dropped its head")
	}
}
