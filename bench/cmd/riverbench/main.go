// Command riverbench measures turnkit runs as River jobs on PostgreSQL:
// N runs enqueued at once, worked by 1, 2 and 4 worker processes, against
// the same runs on the same stores in one process without a queue. It
// prints a Markdown table of throughput and the p50/p99 latency from
// enqueue to the run's final output.
//
//	go run ./bench/cmd/riverbench -postgres "$TURNKIT_POSTGRES_URL" -n 1000
//
// Each run is two turns on an instant model: a tool call, then the final
// message; the chain is persistence and the checkpointer, as in
// production. Every configuration gets a fresh schema, dropped after.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

const envWorker = "RIVERBENCH_WORKER" // "url schema conc": run as a worker process

func main() {
	if spec := os.Getenv(envWorker); spec != "" {
		err := workerMain(spec) // returns only on failure: a worker runs until killed
		fmt.Fprintln(os.Stderr, "riverbench worker:", err)
		os.Exit(1)
	}
	url := flag.String("postgres", os.Getenv("TURNKIT_POSTGRES_URL"), "PostgreSQL URL")
	n := flag.Int("n", 1000, "runs per configuration")
	conc := flag.Int("conc", 8, "runs at once per worker process (and in process)")
	procs := flag.String("procs", "1,2,4", "worker process counts")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "riverbench: give -postgres URL or set TURNKIT_POSTGRES_URL")
		os.Exit(2)
	}
	if err := bench(context.Background(), os.Stdout, *url, *n, *conc, *procs); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

type result struct {
	name     string
	n        int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func bench(ctx context.Context, w io.Writer, url string, n, conc int, procs string) error {
	var results []result
	r, err := inProcess(ctx, url, n, conc)
	if err != nil {
		return err
	}
	results = append(results, r)
	fmt.Fprintf(os.Stderr, "in process: %v\n", r.elapsed)
	for _, p := range strings.Split(procs, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || k < 1 {
			return fmt.Errorf("bad -procs %q", procs)
		}
		r, err := viaRiver(ctx, url, n, conc, k)
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "%d processes: %v\n", k, r.elapsed)
	}
	fmt.Fprintf(w, "| %d runs, %d at once per process | runs/s | p50 | p99 |\n|---|--:|--:|--:|\n", n, conc)
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s |\n", r.name, float64(r.n)/r.elapsed.Seconds(), ms(r.p50), ms(r.p99))
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)*50/100], lat[min(len(lat)-1, len(lat)*99/100)]
}

// schema makes a fresh schema and returns its name and a function that
// drops it.
func schema(ctx context.Context, pool *pgxpool.Pool) (string, func(), error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "riverbench_" + hex.EncodeToString(b)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	return name, func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	}, nil
}

// stack is the production chain on a PostgreSQL store.
type stack struct {
	store  *postgres.Store
	runner *pipeline.Runner
	cp     *checkpoint.Checkpointer
	agent  *pipeline.Agent
}

func newStack(ctx context.Context, url, schema string) (*stack, error) {
	st, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	cp := checkpoint.New(st, checkpoint.WithSession(st))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	lookup := pipeline.NewTool(pipeline.ToolSpec{
		Name: "lookup", Description: "Looks something up.", Parameters: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, json.RawMessage) (string, error) { return `{"found":true}`, nil })
	agent := &pipeline.Agent{Name: "bench", Instructions: "Look it up, then answer.", Model: pipeline.ModelFunc(model), Tools: []pipeline.Tool{lookup}}
	return &stack{store: st, runner: runner, cp: cp, agent: agent}, nil
}

// model calls the tool, then answers once the tool's output is there.
func model(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	last := c.Input.At(c.Input.Len() - 1)
	if last.Kind() == state.KindToolOutput {
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_1", "Found it.")}}, nil
	}
	return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_1", "call_1", "lookup", `{}`)}}, nil
}

// inProcess runs the n runs on conc goroutines, no queue.
func inProcess(ctx context.Context, url string, n, conc int) (result, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	sch, drop, err := schema(ctx, pool)
	if err != nil {
		return result{}, err
	}
	defer drop()
	s, err := newStack(ctx, url, sch)
	if err != nil {
		return result{}, err
	}
	defer s.store.Close()
	ids := make(chan int, n)
	for i := range n {
		ids <- i
	}
	close(ids)
	lat := make([]time.Duration, n)
	errs := make([]error, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conc {
		wg.Go(func() {
			for i := range ids {
				id := "run-" + strconv.Itoa(i)
				_, err := s.runner.Run(ctx, s.agent, pipeline.UserInput("look it up"), pipeline.WithRunID(id), pipeline.WithSessionID("s-"+id))
				if err != nil {
					errs[g] = err
					return
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	p50, p99 := percentiles(lat)
	return result{name: "in process, no queue", n: n, elapsed: elapsed, p50: p50, p99: p99}, nil
}

// viaRiver enqueues the n runs at once and works them in procs worker
// processes.
func viaRiver(ctx context.Context, url string, n, conc, procs int) (result, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	sch, drop, err := schema(ctx, pool)
	if err != nil {
		return result{}, err
	}
	defer drop()
	s, err := newStack(ctx, url, sch) // makes turnkit's tables
	if err != nil {
		return result{}, err
	}
	defer s.store.Close()
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: sch, Logger: quiet()})
	if err != nil {
		return result{}, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, err
	}
	rc, err := river.NewClient(driver, &river.Config{Schema: sch, Logger: quiet()})
	if err != nil {
		return result{}, err
	}

	// Start the workers, and wait for them to say they are ready.
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for range procs {
		c := exec.Command(exe)
		c.Env = append(os.Environ(), envWorker+"="+url+" "+sch+" "+strconv.Itoa(conc))
		c.Stderr = os.Stderr
		out, err := c.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := c.Start(); err != nil {
			return result{}, err
		}
		cmds = append(cmds, c)
		buf := make([]byte, 6)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
			return result{}, fmt.Errorf("worker did not start: %q %v", buf, err)
		}
	}

	params := make([]river.InsertManyParams, n)
	for i := range n {
		id := "run-" + strconv.Itoa(i)
		params[i] = river.InsertManyParams{Args: riverrun.RunArgs{
			RunID: id, Agent: "bench", SessionID: "s-" + id,
			Input: []riverrun.InputItem{{Kind: state.KindUserMessage, Raw: string(state.UserMessage("look it up").Raw())}},
		}}
	}
	if _, err := rc.InsertManyFast(ctx, params); err != nil {
		return result{}, err
	}
	table := pgx.Identifier{sch, "river_job"}.Sanitize()
	for {
		var done, failed int
		if err := pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state IN ('cancelled','discarded','retryable')) FROM "+table).Scan(&done, &failed); err != nil {
			return result{}, err
		}
		if failed > 0 {
			return result{}, fmt.Errorf("%d jobs failed", failed)
		}
		if done == n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var first, last time.Time
	if err := pool.QueryRow(ctx, "SELECT min(created_at), max(finalized_at) FROM "+table).Scan(&first, &last); err != nil {
		return result{}, err
	}
	rows, err := pool.Query(ctx, "SELECT extract(epoch FROM finalized_at - $1::timestamptz) FROM "+table, first)
	if err != nil {
		return result{}, err
	}
	lat := make([]time.Duration, 0, n)
	for rows.Next() {
		var sec float64
		if err := rows.Scan(&sec); err != nil {
			return result{}, err
		}
		lat = append(lat, time.Duration(sec*float64(time.Second)))
	}
	if err := rows.Err(); err != nil {
		return result{}, err
	}
	p50, p99 := percentiles(lat)
	name := fmt.Sprintf("River, %d worker process", procs)
	if procs > 1 {
		name += "es"
	}
	return result{name: name, n: n, elapsed: last.Sub(first), p50: p50, p99: p99}, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// workerMain works runs until killed.
func workerMain(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return fmt.Errorf("bad %s %q", envWorker, spec)
	}
	url, sch := f[0], f[1]
	conc, err := strconv.Atoi(f[2])
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := newStack(ctx, url, sch)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(s.runner, s.cp, riverrun.NewRegistry(s.agent)))
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: sch, Logger: quiet(), Workers: workers,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: conc}},
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	if err := rc.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	select {} // until killed
}
