package torture_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/internal/torture"
)

// TestReadEffectLogSkipsTornRecords: a SIGKILL can cut a record short, and
// the next process appends after the fragment. Seen in a 1 000-kill run on
// PostgreSQL. The fragment is skipped, the whole records around it are
// read, and the log is reported torn; a line that is neither is an error.
func TestReadEffectLogSkipsTornRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		give     string
		wantRuns []string
		wantTorn bool
		wantErr  bool
	}{
		{
			name:     "whole",
			give:     `{"key":"r1/c1","exec":"1-1","run":"r1"}` + "\n" + `{"key":"r2/c1","exec":"2-1","run":"r2"}` + "\n",
			wantRuns: []string{"r1", "r2"},
		},
		{
			name:     "torn last line",
			give:     `{"key":"r1/c1","exec":"1-1","run":"r1"}` + "\n" + `{"key":"r2/c1","ex`,
			wantRuns: []string{"r1"},
			wantTorn: true,
		},
		{
			name: "fragment then a later writer's record",
			give: `{"key":"r1/c1","exec":"1-1","run":"r1"}` + "\n" +
				`{"key":"r1/c2","exec":"{"key":"r3/c1","exec":"3-1","run":"r3"}` + "\n" +
				`{"key":"r3/c2","exec":"3-2","run":"r3"}` + "\n",
			wantRuns: []string{"r1", "r3", "r3"},
			wantTorn: true,
		},
		{
			name:    "garbage",
			give:    `{"key":"r1/c1","exec":"1-1","run":"r1"}` + "\n" + "not json\n",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "effects.log")
			if err := os.WriteFile(path, []byte(tt.give), 0o644); err != nil {
				t.Fatal(err)
			}
			execs, torn, err := torture.ReadEffectLog(path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReadEffectLog: %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			var runs []string
			for _, e := range execs {
				runs = append(runs, e.Run)
			}
			if len(runs) != len(tt.wantRuns) || torn != tt.wantTorn {
				t.Fatalf("runs %v torn %v, want %v torn %v", runs, torn, tt.wantRuns, tt.wantTorn)
			}
			for i := range runs {
				if runs[i] != tt.wantRuns[i] {
					t.Errorf("runs %v, want %v", runs, tt.wantRuns)
				}
			}
		})
	}
}
