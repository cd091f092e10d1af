// Command langchaingobench times langchaingo on turnkit's run scenario and
// prints one JSON object per run length on stdout, for bench/cmd/turnbench,
// in the format of bench/peers/cmd/einobench:
//
//	{"peer":"langchaingo","version":"v0.1.14","turns":100,"n":120,"ns_per_turn":...,"allocs_per_turn":...,"bytes_per_turn":...}
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/bench/peers/langchaingo"
)

// Figure is one line of output.
type Figure struct {
	Peer          string  `json:"peer"`
	Version       string  `json:"version"`
	Turns         int     `json:"turns"`
	N             int     `json:"n"`
	NsPerTurn     float64 `json:"ns_per_turn"`
	AllocsPerTurn float64 `json:"allocs_per_turn"`
	BytesPerTurn  float64 `json:"bytes_per_turn"`
}

func main() {
	testing.Init()
	turns := flag.String("turns", "10,100,1000", "comma-separated run lengths, in tool turns")
	benchtime := flag.String("benchtime", "1s", "time or NNNx per run length, as go test -benchtime")
	flag.Parse()
	if err := run(*turns, *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "langchaingobench:", err)
		os.Exit(1)
	}
}

func run(turnsList, benchtime string) error {
	if err := flag.Set("test.benchtime", benchtime); err != nil {
		return fmt.Errorf("-benchtime %q: %w", benchtime, err)
	}
	version, err := langchaingo.Version()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, s := range strings.Split(turnsList, ",") {
		turns, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || turns < 1 {
			return fmt.Errorf("-turns: %q is not a positive number", s)
		}
		res := testing.Benchmark(func(b *testing.B) { langchaingo.Bench(b, turns) })
		if res.N == 0 {
			return fmt.Errorf("the run of %d turns failed", turns)
		}
		per := float64(res.N) * float64(turns)
		if err := enc.Encode(Figure{
			Peer: "langchaingo", Version: version, Turns: turns, N: res.N,
			NsPerTurn:     float64(res.T.Nanoseconds()) / per,
			AllocsPerTurn: float64(res.MemAllocs) / per,
			BytesPerTurn:  float64(res.MemBytes) / per,
		}); err != nil {
			return err
		}
	}
	return nil
}
