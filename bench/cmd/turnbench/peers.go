package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// peerFigure is one JSON line a peer prints (bench/peers/cmd/einobench,
// bench/peers/genkit/cmd/genkitbench, bench/peers/langchaingo/cmd/langchaingobench,
// bench/peers/js/bench.mjs).
type peerFigure struct {
	Peer          string   `json:"peer"`
	Version       string   `json:"version"`
	Turns         int      `json:"turns"`
	N             int      `json:"n"`
	NsPerTurn     float64  `json:"ns_per_turn"`
	AllocsPerTurn *float64 `json:"allocs_per_turn"`
	BytesPerTurn  *float64 `json:"bytes_per_turn"`
}

func peerLabel(p string) string {
	switch p {
	case "eino":
		return "eino (github.com/cloudwego/eino) ReAct agent"
	case "eino-adk":
		return "eino (github.com/cloudwego/eino) ADK agent"
	case "genkit":
		return "Genkit for Go (github.com/firebase/genkit/go)"
	case "langchaingo":
		return "langchaingo (github.com/tmc/langchaingo)"
	case "js":
		return "@openai/agents (JS)"
	}
	return p
}

// A goPeer is a Go peer: the folder of its module under bench/peers (each
// heavy peer has a module of its own, so that no peer's dependencies move
// another's versions) and the command, run there with go run, that prints
// its figures.
type goPeer struct {
	dir  string
	args []string
}

var goPeers = map[string]goPeer{
	"eino":        {"", []string{"./cmd/einobench"}},
	"eino-adk":    {"", []string{"./cmd/einobench", "-agent", "adk"}},
	"genkit":      {"genkit", []string{"./cmd/genkitbench"}},
	"langchaingo": {"langchaingo", []string{"./cmd/langchaingobench"}},
}

// knownPeers lists the peers in the order of -peers' default.
const knownPeers = "eino,eino-adk,genkit,langchaingo,js"

// runPeer runs one peer's scenario at the given run lengths, as a child
// process in the nested module bench/peers.
func runPeer(ctx context.Context, peer, root, benchtime string, turns []int, progress io.Writer) ([]row, string, error) {
	dir := filepath.Join(root, "bench", "peers")
	list := make([]string, len(turns))
	for i, n := range turns {
		list[i] = strconv.Itoa(n)
	}
	var cmd *exec.Cmd
	switch gp, isGo := goPeers[peer]; {
	case isGo:
		if _, err := exec.LookPath("go"); err != nil {
			return nil, "", errors.New("the go command is not on PATH")
		}
		args := append([]string{"run"}, gp.args...)
		cmd = exec.CommandContext(ctx, "go", append(args, "-turns", strings.Join(list, ","), "-benchtime", benchtime)...)
		cmd.Dir = filepath.Join(dir, gp.dir)
		// The peers' modules stay out of the repository's go.work, so that
		// their dependency graphs never move turnkit's versions.
		cmd.Env = append(os.Environ(), "GOWORK=off")
	case peer == "js":
		if _, err := exec.LookPath("node"); err != nil {
			return nil, "", errors.New("node is not on PATH (install Node.js 20 or later)")
		}
		js := filepath.Join(dir, "js")
		if _, err := os.Stat(filepath.Join(js, "node_modules", "@openai", "agents", "package.json")); err != nil {
			if _, err := exec.LookPath("npm"); err != nil {
				return nil, "", errors.New("its node_modules are missing and npm is not on PATH")
			}
			fmt.Fprintf(progress, "peer js: installing @openai/agents with npm ci (pinned by package-lock.json)\n")
			install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
			install.Dir = js
			if out, err := install.CombinedOutput(); err != nil {
				return nil, "", fmt.Errorf("npm ci: %v: %s", err, lastLines(out, 3))
			}
		}
		cmd = exec.CommandContext(ctx, "node", "bench.mjs", "--turns", strings.Join(list, ","), "--ms", strconv.FormatInt(millis(benchtime), 10))
		cmd.Dir = js
	default:
		return nil, "", fmt.Errorf("unknown peer %q (want some of %s)", peer, knownPeers)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	var (
		rows    []row
		version string
		perr    error
	)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var f peerFigure
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil || f.Peer == "" || f.Turns < 1 || f.N < 1 {
			perr = fmt.Errorf("unreadable figure %q", sc.Text())
			continue
		}
		version = f.Version
		r := row{
			scenario: scenario.Scenario{
				Name: fmt.Sprintf("run/%s/turns=%d", f.Peer, f.Turns), Group: "run",
				Baseline: fmt.Sprintf("run/bare/turns=%d", f.Turns), PerOp: f.Turns, Unit: "turn",
			},
			n: f.N, ns: f.NsPerTurn,
		}
		if f.AllocsPerTurn != nil && f.BytesPerTurn != nil {
			r.allocs, r.bytes, r.hasAllocs = *f.AllocsPerTurn, *f.BytesPerTurn, true
		}
		rows = append(rows, r)
		fmt.Fprintf(progress, "peer %s: %4d turns: %s/turn (%d runs)\n", peer, f.Turns, formatNs(f.NsPerTurn), f.N)
	}
	if err := cmd.Wait(); err != nil {
		return nil, "", fmt.Errorf("%v: %s", err, lastLines(stderr.Bytes(), 3))
	}
	if perr != nil {
		return nil, "", perr
	}
	if len(rows) != len(turns) {
		return nil, "", fmt.Errorf("it printed %d figures for %d run lengths", len(rows), len(turns))
	}
	return rows, version, nil
}

// millis converts a -benchtime to the JS peer's time budget: a duration, or
// 1 ms (one run per length) for an iteration count.
func millis(benchtime string) int64 {
	if d, err := time.ParseDuration(benchtime); err == nil && d >= time.Millisecond {
		return d.Milliseconds()
	}
	return 1
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// A machine describes where a run happened.
type machine struct {
	date        string
	cpu         string
	cores       int
	load        string
	goVersion   string
	nodeVersion string
	benchtime   string
	rounds      int
	peers       []string
}

func (m machine) loadNote() string {
	if m.load == "" {
		return ""
	}
	return ", load average " + m.load + " at the start"
}

func describeMachine(ctx context.Context) machine {
	m := machine{
		date:        time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		cpu:         runtime.GOOS + "/" + runtime.GOARCH,
		cores:       runtime.NumCPU(),
		goVersion:   runtime.Version(),
		nodeVersion: "no Node.js",
	}
	if v := flagValue("test.benchtime"); v != "" {
		m.benchtime = v
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v) + " (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.load = f[0]
		}
	}
	if out, err := exec.CommandContext(ctx, "node", "--version").Output(); err == nil {
		m.nodeVersion = "Node.js " + strings.TrimSpace(string(out))
	}
	return m
}
