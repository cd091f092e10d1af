package state_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var goldenKey = []byte("golden test key, not a secret!!!")

// goldenRuns are the checkpoints pinned in testdata: a change of the
// format changes them, and old fixtures must keep loading.
func goldenRuns(t *testing.T) map[string]struct {
	run  *state.Run
	opts []state.MarshalOption
} {
	fresh := state.NewRun("run_new", "assistant")
	finished := statetest.SampleRun(t, "run_done")
	finished.Finish("All clean.")
	return map[string]struct {
		run  *state.Run
		opts []state.MarshalOption
	}{
		"new":    {run: fresh},
		"paused": {run: statetest.SampleRun(t, "run_paused")},
		"signed": {run: statetest.SampleRun(t, "run_signed"), opts: []state.MarshalOption{state.WithSigningKey("golden", goldenKey)}},
		"done":   {run: finished},
		"elicit": {run: statetest.ElicitingRun(t, "run_elicit")},
	}
}

func TestGolden(t *testing.T) {
	for name, g := range goldenRuns(t) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name+".golden.json")
			got := mustMarshal(t, g.run, append(g.opts, state.WithIndent())...)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("Marshal differs from %s; a format change needs a new schema version and a migration (-golden +got):\n%s", path, d)
			}
			var verify []state.UnmarshalOption
			if len(g.opts) > 0 {
				verify = append(verify, state.WithVerifyKeys(map[string][]byte{"golden": goldenKey}))
			}
			loaded := mustUnmarshal(t, want, verify...)
			if d := cmp.Diff(snap(g.run, "example.com/counter"), snap(loaded, "example.com/counter")); d != "" {
				t.Errorf("%s loads differently (-want +got):\n%s", path, d)
			}
		})
	}
}
