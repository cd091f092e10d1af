package riverrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraces checks the wiring the package documentation gives: River's
// OpenTelemetry middleware makes a span per job attempt, the run's span is
// its child, and with trace propagation the attempt links to the span
// that enqueued the job.
func TestTraces(t *testing.T) {
	b := sqliteBackend(t)
	ctx := t.Context()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	st, err := b.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := openSQLite(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	cp := checkpoint.New(st, checkpoint.WithSession(st))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		tracing.Middleware(tracing.WithTracerProvider(tp)),
		cp.Middleware(),
	))
	stack := newTestStack(st, "effect")
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(runner, cp, riverrun.NewRegistry(stack.agent)))
	cfg := riverConfig("", workers)
	cfg.Middleware = []rivertype.Middleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider: tp, EnableTracePropagation: true,
	})}
	rc, err := river.NewClient(db.driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.Stop(sctx)
	}()

	ectx, enqueue := tp.Tracer("test").Start(ctx, "handle request")
	res, err := riverrun.NewClient(rc, st).Enqueue(ectx, riverrun.Start{RunID: "t1", Agent: "agent", Text: "go"}, nil)
	enqueue.End()
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, rc, res.Job.ID, rivertype.JobStateCompleted)

	var work, run sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "river.work":
			work = s
		case "invoke_agent agent":
			run = s
		}
	}
	if work == nil || run == nil {
		names := []string{}
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("no work or run span among %v", names)
	}
	if run.Parent().SpanID() != work.SpanContext().SpanID() || run.SpanContext().TraceID() != work.SpanContext().TraceID() {
		t.Errorf("the run's span is not a child of the job's work span")
	}
	linked := false
	for _, l := range work.Links() {
		linked = linked || l.SpanContext.TraceID() == enqueue.SpanContext().TraceID()
	}
	if !linked {
		t.Errorf("the work span has no link to the enqueuing trace")
	}
}
