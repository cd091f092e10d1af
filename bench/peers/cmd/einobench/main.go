// Command einobench times eino's ReAct agent (-agent react, the default) or
// its ADK ChatModelAgent run by adk.Runner (-agent adk) on turnkit's run
// scenario and prints one JSON object per run length on stdout, for
// bench/cmd/turnbench:
//
//	{"peer":"eino","version":"v0.7.36","turns":100,"n":120,"ns_per_turn":...,"allocs_per_turn":...,"bytes_per_turn":...}
//
// The peer is "eino" for the ReAct agent and "eino-adk" for the ADK agent.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/bench/peers/eino"
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
	agent := flag.String("agent", "react", "the agent to time: react (flow/agent/react) or adk (adk.ChatModelAgent with adk.Runner)")
	flag.Parse()
	if err := run(*agent, *turns, *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "einobench:", err)
		os.Exit(1)
	}
}

func run(agent, turnsList, benchtime string) error {
	peer, bench := "eino", eino.Bench
	switch agent {
	case "react":
	case "adk":
		peer, bench = "eino-adk", eino.BenchADK
	default:
		return fmt.Errorf("-agent %q: want react or adk", agent)
	}
	if err := flag.Set("test.benchtime", benchtime); err != nil {
		return fmt.Errorf("-benchtime %q: %w", benchtime, err)
	}
	version, err := eino.Version()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, s := range strings.Split(turnsList, ",") {
		turns, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || turns < 1 {
			return fmt.Errorf("-turns: %q is not a positive number", s)
		}
		res := testing.Benchmark(func(b *testing.B) { bench(b, turns) })
		if res.N == 0 {
			return fmt.Errorf("the run of %d turns failed", turns)
		}
		per := float64(res.N) * float64(turns)
		if err := enc.Encode(Figure{
			Peer: peer, Version: version, Turns: turns, N: res.N,
			NsPerTurn:     float64(res.T.Nanoseconds()) / per,
			AllocsPerTurn: float64(res.MemAllocs) / per,
			BytesPerTurn:  float64(res.MemBytes) / per,
		}); err != nil {
			return err
		}
	}
	return nil
}
