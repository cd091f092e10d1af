package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// TestGrowthSummary checks the growth summary's ratios on made-up figures:
// the message at the largest size over the smallest, and the crash-safe
// chain's storage over persistence alone's.
func TestGrowthSummary(t *testing.T) {
	r := &growthReport{env: machine{date: "2026-01-02 03:04 UTC", cpu: "test cpu", cores: 2, goVersion: "go1.26"},
		cfg: growthConfig{backends: []string{"sqlite"}, turns: 10, sizes: []int{100, 1000}, messages: 5}}
	r.long = []scenario.LongRun{{Backend: "sqlite", Chain: "persistence", Turns: 10,
		First: time.Millisecond, Last: 3 * time.Millisecond, FirstMean: time.Millisecond, LastMean: 2 * time.Millisecond, Total: time.Second}}
	msg := func(chain string, h int, scale float64, stored int64) scenario.Message {
		return scenario.Message{Backend: "sqlite", Chain: chain, History: h, Messages: 5, Time: time.Duration(scale * 1e6),
			Written: 200 * scale, StoredGrowth: 400 * scale, Stored: stored, Decoded: float64(h), ModelBytes: 100 * float64(h),
			Calls: 10, CallBytes: 10 * float64(h), MaxCallBytes: int64(12 * h)}
	}
	r.conv = []scenario.Message{
		msg("persistence", 100, 1, 1000), msg("persistence", 1000, 1, 10000),
		msg("checkpoint", 100, 10, 5000), msg("checkpoint", 1000, 100, 40000),
	}
	md := r.markdown()
	for _, want := range []string{
		"| sqlite | persistence | 10 | 1.00 ms (1.00 ms) | 3.00 ms (2.00 ms) | 3.00× (2.00×) | 1s |",
		"| sqlite | persistence | 1000 | 1.00 ms | 200 | 400 | 10000 | 1000 | 100000 | 10 | 10000 | 12000 |",
		"| sqlite | persistence | 1000 | 1.00× | 1.00× | 10.00× | 10.00× | 10.00× | base | base | base |",
		// checkpoint at 1000 over checkpoint at 100: time 10×; its stored
		// growth (40 000) over persistence alone's (400) and over its
		// bytes written (200); 40 000 B stored over 10 000.
		"| sqlite | checkpoint | 1000 | 10.00× | 10.00× | 10.00× | 10.00× | 10.00× | 100.00× | 200.00× | 4.00× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if err := r.writeCSV(filepath.Join(t.TempDir(), "growth.csv")); err != nil {
		t.Fatal(err)
	}
	if err := r.plot(filepath.Join(t.TempDir(), "growth.png")); err != nil {
		t.Fatal(err)
	}
}
