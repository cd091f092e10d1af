package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// sessionBackends are the session stores whose own BenchmarkAppend (the
// store against the raw driver doing the same inserts, written with each
// backend) turnbench runs with go test and puts in its table.
var sessionBackends = []struct{ name, pkg, env string }{
	{"sqlite", "./session/sqlite", ""},
	{"postgres", "./session/postgres", "TURNKIT_POSTGRES_URL"},
	{"redis", "./session/redis", "TURNKIT_REDIS_URL"},
}

// sessionScenarios are the table rows of a backend: the raw driver is the
// baseline of the store; the raw driver doing the store's own writes, if
// the backend's benchmark has it (raw-same-writes), a second baseline.
func sessionScenarios(backend string) (store, raw, same scenario.Scenario) {
	rawName, sameName := "session/"+backend+"/raw-driver", "session/"+backend+"/raw-same-writes"
	raw = scenario.Scenario{Name: rawName, Group: "session", PerOp: 1, Unit: "commit"}
	same = scenario.Scenario{Name: sameName, Group: "session", Baseline: rawName, PerOp: 1, Unit: "commit"}
	store = scenario.Scenario{Name: "session/" + backend + "/store", Group: "session", Baseline: rawName, Same: sameName, PerOp: 1, Unit: "commit"}
	return store, raw, same
}

// pairedLine is BenchmarkAppendPaired's line, whose metrics hold the
// store's commit time ÷ the same writes', interleaved (store/same).
var pairedLine = regexp.MustCompile(`^BenchmarkAppendPaired(?:-\d+)?\s+\d+\s+.*?([\d.]+) store/same`)

var benchLine = regexp.MustCompile(`^BenchmarkAppend/(turnkit|raw|raw-same-writes)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

// runGoBench runs a backend's BenchmarkAppend and returns its rows (see
// parseGoBench).
func runGoBench(ctx context.Context, root, pkg, benchtime, noServer string, store, raw, same scenario.Scenario) ([]row, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkAppend(Paired)?$", "-benchmem", "-count", "1", "-benchtime", benchtime, pkg)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkAppend %s: %v: %s", pkg, err, lastLines(out.Bytes(), 3))
	}
	return parseGoBench(&out, noServer, store, raw, same), nil
}

// parseGoBench returns the rows of a BenchmarkAppend's output: the raw
// driver's, the raw driver doing the store's writes if the benchmark has
// that case (else the store's row names no such baseline), and the
// store's, with the ratio of the two BenchmarkAppendPaired measured
// interleaved, if it ran. A case that printed no figure (skipped: no
// server) is returned with skip set, noServer its reason if not empty.
func parseGoBench(r io.Reader, noServer string, store, raw, same scenario.Scenario) []row {
	cases := map[string]scenario.Scenario{"raw": raw, "raw-same-writes": same, "turnkit": store}
	found := map[string]row{}
	var paired float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := pairedLine.FindStringSubmatch(sc.Text()); m != nil {
			paired, _ = strconv.ParseFloat(m[1], 64)
			continue
		}
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		x := row{scenario: cases[m[1]]}
		x.n, _ = strconv.Atoi(m[2])
		x.ns, _ = strconv.ParseFloat(m[3], 64)
		if m[4] != "" && m[5] != "" {
			x.bytes, _ = strconv.ParseFloat(m[4], 64)
			x.allocs, _ = strconv.ParseFloat(m[5], 64)
			x.hasAllocs = true
		}
		found[m[1]] = x
	}
	_, hasSame := found["raw-same-writes"]
	var rows []row
	for _, k := range []string{"raw", "raw-same-writes", "turnkit"} {
		x, ok := found[k]
		if k == "raw-same-writes" && !ok {
			continue
		}
		if !ok {
			why := "the benchmark printed no figure"
			if noServer != "" {
				why = noServer
			}
			x = row{scenario: cases[k], skip: why}
		}
		if k == "turnkit" && !hasSame {
			x.scenario.Same = ""
		}
		if k == "turnkit" && ok && hasSame {
			x.pairedSame = paired
		}
		rows = append(rows, x)
	}
	return rows
}

// adapterLine is a line of BenchmarkAdapterShare's output: a case's name,
// its iterations and its metrics (value, unit pairs).
var adapterLine = regexp.MustCompile(`^BenchmarkAdapterShare/(\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// runAdapterBench runs the bench module's BenchmarkAdapterShare once and
// returns its rows, three per case (sdk-typed, sdk, adapter).
func runAdapterBench(ctx context.Context, root, benchtime string) ([]row, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkAdapterShare$", "-count", "1", "-benchtime", benchtime, ".")
	cmd.Dir = filepath.Join(root, "bench")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkAdapterShare in bench: %v: %s", err, lastLines(out.Bytes(), 3))
	}
	rows := parseAdapterBench(&out)
	if len(rows) == 0 {
		return nil, fmt.Errorf("go test -bench BenchmarkAdapterShare in bench printed no figure: %s", lastLines(out.Bytes(), 3))
	}
	return rows, nil
}

// adapterScenarios are the table rows of an adapter case: the SDK's typed
// call is the baseline of the other two, and the adapter's row has the
// raw SDK call as its Own part, so that its ratio is its own share.
func adapterScenarios(name string) (typed, raw, adapter scenario.Scenario) {
	base := "adapter/" + name + "/"
	typed = scenario.Scenario{Name: base + "sdk-typed", Group: "adapter", PerOp: 1, Unit: "call", Paired: true}
	raw = scenario.Scenario{Name: base + "sdk", Group: "adapter", Baseline: typed.Name, PerOp: 1, Unit: "call", Paired: true}
	adapter = scenario.Scenario{Name: base + "adapter", Group: "adapter", Baseline: typed.Name, Own: raw.Name, PerOp: 1, Unit: "call", Paired: true}
	return typed, raw, adapter
}

// parseAdapterBench reads BenchmarkAdapterShare's lines: each call's
// median time (typed-ns/call, sdk-ns/call, adapter-ns/call), its
// allocations and bytes, and the adapter's own share paired per call
// (own-%).
func parseAdapterBench(r io.Reader) []row {
	var rows []row
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := adapterLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		metrics := map[string]float64{}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
		typed, raw, adapter := adapterScenarios(m[1])
		for _, c := range []struct {
			s   scenario.Scenario
			key string
		}{{typed, "typed"}, {raw, "sdk"}, {adapter, "adapter"}} {
			x := row{scenario: c.s, n: n, ns: metrics[c.key+"-ns/call"],
				allocs: metrics[c.key+"-allocs/call"], bytes: metrics[c.key+"-B/call"], hasAllocs: true}
			if c.key == "adapter" {
				x.share, x.hasShare = metrics["own-%"]/100, true
			}
			rows = append(rows, x)
		}
	}
	return rows
}
