package state

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"testing"
)

// TestSealedHeadFitsItsRoom writes sealed heads into buffers of the room
// Delta.seal makes for them: none grows (a grown buffer is one more
// allocation and copy of every sealed part per save), and each is the
// JSON that openStored reads.
func TestSealedHeadFitsItsRoom(t *testing.T) {
	tests := []struct {
		name          string
		runID, sessID string
		version, full int64
	}{
		{name: "small", runID: "r", sessID: "s", version: 1, full: 1},
		{name: "no session", runID: "run-1", version: 12, full: 3},
		{name: "largest numbers", runID: "run-1", sessID: "session-1", version: math.MaxInt64, full: math.MaxInt64},
	}
	ct := make([]byte, 200)
	for _, tt := range tests {
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
