// Command torture runs the turnkit reliability harness at scale: the
// kill-and-resume loop (-kills), the load driver (-load) or both, on a
// SQLite file in -dir, on PostgreSQL (-postgres or TURNKIT_POSTGRES_URL) or
// on Redis (-redis), and prints the report as JSON. It exits 1 if any
// invariant was broken.
//
//	go run ./internal/torture/cmd/torture -kills 1000
//	go run ./internal/torture/cmd/torture -load 200 -postgres "$TURNKIT_POSTGRES_URL"
//	go run ./internal/torture/cmd/torture -kills 200 -redis "$TURNKIT_REDIS_URL"
//
// The program starts copies of itself as the worker processes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/turnkit/turnkit/internal/torture"
)

func main() {
	torture.ChildMain()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ok, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (bool, error) {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dir      = fs.String("dir", "", "directory for the SQLite file and the effect log (default: a new temporary directory)")
		pg       = fs.String("postgres", os.Getenv("TURNKIT_POSTGRES_URL"), "PostgreSQL URL (default $TURNKIT_POSTGRES_URL; empty: SQLite)")
		rd       = fs.String("redis", "", "Redis URL (takes precedence over -postgres)")
		kills    = fs.Int("kills", 1000, "kills of the torture loop (0: skip it)")
		load     = fs.Int("load", 0, "runs of the load driver (0: skip it)")
		procs    = fs.Int("processes", 2, "worker processes of the load driver")
		workers  = fs.Int("workers", 4, "goroutines per worker process")
		seed     = fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the plans and kill points")
		progress = fs.Bool("v", false, "print a line per generation")
	)
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "turnkit-torture-")
		if err != nil {
			return false, err
		}
		*dir = d
	}
	launch, err := torture.SelfLauncher()
	if err != nil {
		return false, err
	}
	b := torture.Backend{Dir: *dir, PostgresURL: *pg, Schema: fmt.Sprintf("torture_%d", time.Now().UnixNano())}
	if *rd != "" {
		b.PostgresURL, b.RedisURL = "", *rd
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	ok := true
	if *kills > 0 {
		cfg := torture.Config{Backend: b, Launch: launch, Kills: *kills, Seed: *seed}
		if *progress {
			cfg.Progress = stderr
		}
		rep, err := torture.Torture(ctx, cfg)
		if rep != nil {
			_ = enc.Encode(rep)
			ok = ok && len(rep.Violations) == 0
		}
		if err != nil {
			return false, err
		}
	}
	if *load > 0 {
		rep, err := torture.Load(ctx, torture.LoadConfig{Backend: b, Launch: launch, Runs: *load, Sessions: max(*load/10, 1), Processes: *procs, Workers: *workers, Seed: *seed})
		if rep != nil {
			_ = enc.Encode(struct {
				*torture.LoadReport
				RunsPerSecond float64 `json:"runs_per_second"`
			}{rep, rep.RunsPerSecond()})
			ok = ok && len(rep.Violations) == 0
		}
		if err != nil {
			return false, err
		}
	}
	fmt.Fprintln(stderr, "data in", *dir)
	return ok, nil
}
