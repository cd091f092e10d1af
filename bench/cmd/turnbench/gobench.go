package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"

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
// baseline of the store.
func sessionScenarios(backend string) (store, raw scenario.Scenario) {
	rawName := "session/" + backend + "/raw-driver"
	raw = scenario.Scenario{Name: rawName, Group: "session", PerOp: 1, Unit: "commit"}
	store = scenario.Scenario{Name: "session/" + backend + "/store", Group: "session", Baseline: rawName, PerOp: 1, Unit: "commit"}
	return store, raw
}

var benchLine = regexp.MustCompile(`^BenchmarkAppend/(turnkit|raw)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

// runGoBench runs a backend's BenchmarkAppend and returns its two rows; a
// sub-benchmark that printed no figure (skipped: no server) is returned
// with skip set.
func runGoBench(ctx context.Context, root, pkg, benchtime, noServer string, store, raw scenario.Scenario) ([]row, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkAppend$", "-benchmem", "-count", "1", "-benchtime", benchtime, pkg)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkAppend %s: %v: %s", pkg, err, lastLines(out.Bytes(), 3))
	}
	return parseGoBench(&out, noServer, store, raw), nil
}

func parseGoBench(r io.Reader, noServer string, store, raw scenario.Scenario) []row {
	found := map[string]row{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s := store
		if m[1] == "raw" {
			s = raw
		}
		x := row{scenario: s}
		x.n, _ = strconv.Atoi(m[2])
		x.ns, _ = strconv.ParseFloat(m[3], 64)
		if m[4] != "" && m[5] != "" {
			x.bytes, _ = strconv.ParseFloat(m[4], 64)
			x.allocs, _ = strconv.ParseFloat(m[5], 64)
			x.hasAllocs = true
		}
		found[m[1]] = x
	}
	var rows []row
	for _, k := range []string{"raw", "turnkit"} {
		x, ok := found[k]
		if !ok {
			s := store
			if k == "raw" {
				s = raw
			}
			why := "the benchmark printed no figure"
			if noServer != "" {
				why = noServer
			}
			x = row{scenario: s, skip: why}
		}
		rows = append(rows, x)
	}
	return rows
}
