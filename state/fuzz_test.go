package state_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// FuzzUnmarshal checks that Unmarshal never panics, fails only with typed
// errors, and that whatever it accepts encodes and decodes again to the
// same bytes. The seed corpus is every checkpoint in testdata, good and
// bad.
func FuzzUnmarshal(f *testing.F) {
	for _, pattern := range []string{"testdata/*.json", "testdata/bad/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	keys := state.WithVerifyKeys(map[string][]byte{"golden": goldenKey})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range [][]state.UnmarshalOption{nil, {keys}} {
			r, err := state.Unmarshal(data, opts...)
			if err != nil {
				var (
					de *state.DecodeError
					ve *state.VersionError
					se *state.SignatureError
				)
				if !errors.As(err, &de) && !errors.As(err, &ve) && !errors.As(err, &se) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				if r != nil {
					t.Fatal("a run returned with an error")
				}
				continue
			}
			once, err := state.Marshal(r)
			if err != nil {
				t.Fatalf("Marshal of an accepted checkpoint: %v", err)
			}
			again, err := state.Unmarshal(once)
			if err != nil {
				t.Fatalf("re-Unmarshal of %s: %v", once, err)
			}
			twice, err := state.Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if string(once) != string(twice) {
				t.Fatalf("not stable:\n%s\n%s", once, twice)
			}
		}
	})
}

// TestBadFixtures pins the typed error of each sample in testdata/bad.
func TestBadFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want error
	}{
		{"truncated.json", state.ErrMalformed},
		{"future_version.json", state.ErrVersion},
		{"null.json", state.ErrMalformed},
		{"wrong_type.json", state.ErrMalformed},
		{"positions.json", state.ErrInvalid},
		{"pending_unknown_call.json", state.ErrInvalid},
		{"tampered.json", state.ErrTampered},
		{"item_missing_call_id.json", state.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "bad", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = state.Unmarshal(data, state.WithVerifyKeys(map[string][]byte{"golden": goldenKey}))
			if tt.file != "tampered.json" && errors.Is(err, state.ErrTampered) {
				_, err = state.Unmarshal(data) // unsigned samples: check the content
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Unmarshal(%s) = %v, want %v", tt.file, err, tt.want)
			}
		})
	}
}
