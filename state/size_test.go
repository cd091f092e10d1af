package state

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckpointSize: the room checkpointSize gives a checkpoint holds
// what marshalWire writes into it, whole checkpoints and deltas' heads
// (with their record, some 200 bytes) of runs of every shape the golden
// files pin (new, paused with pending approvals, awaiting an answer,
// finished with decisions and guardrail results), signed and not: a
// checkpoint that outgrows its buffer is copied into one twice as large
// on every save. The room is not wasteful either: at most the checkpoint
// and a kilobyte.
func TestCheckpointSize(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden checkpoints: %v", err)
	}
	key := []byte("size test key, not a secret at all")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var verify []UnmarshalOption
		if filepath.Base(path) == "signed.golden.json" {
			verify = append(verify, WithVerifyKeys(map[string][]byte{"golden": []byte("golden test key, not a secret!!!")}))
		}
		r, err := Unmarshal(data, verify...)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r.SetExtension("size.test", []byte(`{"note":"a record of the caller's"}`))
		for _, opts := range [][]MarshalOption{nil, {WithSigningKey("size-key", key)}} {
			cfg := newMarshalConfig(opts)
			whole, err := r.wire()
			if err != nil {
				t.Fatal(err)
			}
			var d deltaSnapshot
			if err := r.takeDelta(&d); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what string
				s    *snapshot
			}{{"checkpoint", &whole}, {"delta's head", &d.head}} {
				out, err := marshalWire(c.s, &cfg)
				if err != nil {
					t.Fatal(err)
				}
				room := checkpointSize(c.s, &cfg)
				if len(out) > room || room > len(out)+1024 {
					t.Errorf("%s, %s (signed %t): %d bytes in a room of %d", filepath.Base(path), c.what, cfg.key != nil, len(out), room)
				}
			}
		}
	}
}
