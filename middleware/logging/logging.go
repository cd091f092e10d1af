package logging

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Middleware returns middleware that logs a run's life to logger with typed
// fields: run_id, agent, turn, tool, call_id, duration, input_tokens,
// output_tokens and the like. A nil logger logs nothing. The events and
// their levels:
//
//   - debug: run started, turn finished, model call, tool call, guardrail
//     passed;
//   - info: run finished (outcome final_output, interrupted or error),
//     handoff, approval requested, approval decision;
//   - warn: guardrail tripped, tool failed (a tool's error reported to the
//     model), and a turn that failed by a guardrail's verdict or by
//     cancellation;
//   - error: turn failed, and run failed for an error that no turn
//     returned (such as reaching the turn limit).
//
// A turn's error is logged once, by the turn event, and returned unchanged;
// the run and model events do not repeat it. A model call whose stored
// response the server no longer had (it was sent again with the whole
// input) has the field continuation_lost. Payloads (arguments, outputs,
// messages) are logged only with [WithPayloads]. Fields are built only
// for events the logger's level enables (zap's Logger.Check), and with a
// logger that writes nothing at any level (zap.NewNop()) the turn, model
// and tool stages read its level and nothing else.
//
// Put it right after tracing, outside the middleware whose work it reports.
// Its handlers are safe for concurrent use.
func Middleware(logger *zap.Logger, opts ...Option) pipeline.Middleware {
	if logger == nil {
		logger = zap.NewNop()
	}
	l := &logMiddleware{log: logger, cfg: newConfig(opts)}
	return pipeline.Middleware{Name: "logging", Run: l.wrapRun, Turn: l.wrapTurn, Model: l.wrapModel, Tool: l.wrapTool}
}

// logMiddleware holds only configuration fixed at construction.
type logMiddleware struct {
	log *zap.Logger
	cfg *config
}

// silent reports whether the logger writes nothing at any level, as
// zap.NewNop() does: the turn, model and tool stages then only call the
// next handler, without reading the clock or the run's guardrail results
// for events no one would see. The level is read on every call, so a
// logger whose level changes (zap.AtomicLevel) is followed from the next
// stage on.
//
// zap.NewNop's core is answered at once: asking its level tries each of
// zap's seven levels in turn through the core's interface, and that was
// a fifth of what the default chain's three silent checks added to a
// turn.
func (l *logMiddleware) silent() bool {
	core := l.log.Core()
	return core == nopCore || zapcore.LevelOf(core) == zapcore.InvalidLevel
}

// nopCore is the core of zap.NewNop, which writes nothing at any level.
var nopCore = zapcore.NewNopCore()

// runScope is what a run shares with its turns: whether a turn logged
// the error that ended the run (a failed turn ends it), so that the run
// does not log it again.
type runScope struct {
	mu     sync.Mutex
	logged bool
}

type scopeKey struct{}

func scopeFrom(ctx context.Context) *runScope {
	s, _ := ctx.Value(scopeKey{}).(*runScope)
	return s
}

func (l *logMiddleware) wrapRun(next pipeline.RunHandler) pipeline.RunHandler {
	return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
		if ce := l.log.Check(zap.DebugLevel, "run started"); ce != nil {
			fields := []zap.Field{
				zap.String("run_id", c.Run.ID()), zap.String("agent", c.Agent.Name),
				zap.Bool("resumed", c.Resumed), zap.Bool("streaming", c.Streaming()),
			}
			if id := c.Run.SessionID(); id != "" {
				fields = append(fields, zap.String("session_id", id))
			}
			ce.Write(fields...)
		}
		scope := &runScope{}
		ctx = context.WithValue(ctx, scopeKey{}, scope)
		start, before := l.cfg.now(), c.Run.Usage()
		res, err := next.ServeRun(ctx, c)

		scope.mu.Lock()
		logged := err != nil && scope.logged
		scope.mu.Unlock()
		lvl, msg, outcome := zap.InfoLevel, "run finished", "final_output"
		switch {
		case err != nil && !logged:
			lvl, msg, outcome = levelOf(err), "run failed", "error"
		case err != nil:
			outcome = "error"
		case res != nil && res.Interrupted():
			outcome = "interrupted"
		}
		if ce := l.log.Check(lvl, msg); ce != nil {
			u := c.Run.Usage()
			fields := []zap.Field{
				zap.String("run_id", c.Run.ID()), zap.String("agent", c.Run.Agent()),
				zap.String("outcome", outcome), zap.Int("turns", c.Run.Turn()),
				zap.Duration("duration", l.cfg.now().Sub(start)),
				zap.Int64("input_tokens", u.InputTokens-before.InputTokens),
				zap.Int64("output_tokens", u.OutputTokens-before.OutputTokens),
			}
			if outcome == "interrupted" {
				fields = append(fields, zap.Int("pending", len(res.Interruptions())))
			}
			if err != nil && !logged {
				fields = append(fields, zap.Error(err))
			}
			ce.Write(fields...)
		}
		return res, err
	})
}

func (l *logMiddleware) wrapTurn(next pipeline.Handler) pipeline.Handler {
	return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
		if l.silent() {
			return next.ServeTurn(ctx, t)
		}
		start, g0 := l.cfg.now(), t.Run.GuardrailCount()
		err := next.ServeTurn(ctx, t)
		elapsed := l.cfg.now().Sub(start)
		l.guardrails(t.Run, t.Run.GuardrailResultsSince(g0), "")
		if err != nil {
			if ce := l.log.Check(levelOf(err), "turn failed"); ce != nil {
				ce.Write(zap.String("run_id", t.Run.ID()), zap.Int("turn", t.Number), zap.String("agent", t.Agent.Name),
					zap.Duration("duration", elapsed), zap.Error(err))
			}
			if s := scopeFrom(ctx); s != nil {
				s.mu.Lock()
				s.logged = true
				s.mu.Unlock()
			}
			return err
		}
		if ce := l.log.Check(zap.DebugLevel, "turn finished"); ce != nil {
			ce.Write(zap.String("run_id", t.Run.ID()), zap.Int("turn", t.Number), zap.String("agent", t.Agent.Name),
				zap.Bool("resumed", t.Resumed), zap.Stringer("next", t.Next.Kind), zap.Int("calls", len(t.Calls)),
				zap.Duration("duration", elapsed))
		}
		if t.Next.Kind == pipeline.NextHandoff && t.Next.Agent != nil {
			if ce := l.log.Check(zap.InfoLevel, "handoff"); ce != nil {
				ce.Write(zap.String("run_id", t.Run.ID()), zap.Int("turn", t.Number),
					zap.String("from", t.Agent.Name), zap.String("to", t.Next.Agent.Name))
			}
		}
		return nil
	})
}

func (l *logMiddleware) wrapModel(next pipeline.Model) pipeline.Model {
	return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if l.silent() {
			return next.Respond(ctx, c)
		}
		start := l.cfg.now()
		resp, err := next.Respond(ctx, c)
		if ce := l.log.Check(zap.DebugLevel, "model call"); ce != nil {
			fields := make([]zap.Field, 0, 11)
			fields = append(fields, zap.String("run_id", c.Turn.Run.ID()), zap.Int("turn", c.Turn.Number),
				zap.String("agent", c.Agent.Name), zap.String("model", c.Settings.Model),
				zap.Int("input_items", c.Input.Len()), zap.Duration("duration", l.cfg.now().Sub(start)))
			if err != nil {
				fields = append(fields, zap.Bool("failed", true)) // the turn logs the error
			} else {
				fields = append(fields, zap.String("response_id", resp.ID), zap.String("response_model", resp.Model),
					zap.Int64("input_tokens", resp.Usage.InputTokens), zap.Int64("output_tokens", resp.Usage.OutputTokens))
				if h := hostedOf(resp.Items); len(h) > 0 {
					fields = append(fields, zap.Array("hosted_calls", h))
				}
				if resp.ContinuationLost != "" {
					fields = append(fields, zap.String("continuation_lost", resp.ContinuationLost))
				}
				if l.cfg.payloads {
					fields = append(fields, zap.Array("output", itemsArray(resp.Items)))
				}
			}
			ce.Write(fields...)
		}
		return resp, err
	})
}

func (l *logMiddleware) wrapTool(next pipeline.ToolHandler) pipeline.ToolHandler {
	return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
		if l.silent() {
			return next.CallTool(ctx, c)
		}
		run := c.Turn.Run
		start, g0 := l.cfg.now(), run.GuardrailCount()
		res, err := next.CallTool(ctx, c)
		elapsed := l.cfg.now().Sub(start)
		l.guardrails(run, run.GuardrailResultsSince(g0), c.CallID)
		if err == nil && res != nil {
			l.approval(c, res)
		}
		if err == nil && res != nil && res.Err != nil {
			if ce := l.log.Check(zap.WarnLevel, "tool failed"); ce != nil {
				ce.Write(l.callFields(c, res, elapsed, zap.Error(res.Err))...)
			}
			return res, err
		}
		if ce := l.log.Check(zap.DebugLevel, "tool call"); ce != nil {
			if err != nil {
				ce.Write(l.callFields(c, nil, elapsed, zap.Bool("failed", true))...) // the turn logs the error
			} else {
				ce.Write(l.callFields(c, res, elapsed)...)
			}
		}
		return res, err
	})
}

func (l *logMiddleware) callFields(c *pipeline.ToolCall, res *pipeline.ToolResult, elapsed time.Duration, extra ...zap.Field) []zap.Field {
	fields := make([]zap.Field, 0, 9+len(extra))
	fields = append(fields, zap.String("run_id", c.Turn.Run.ID()), zap.Int("turn", c.Turn.Number),
		zap.String("tool", c.Name), zap.String("call_id", c.CallID), zap.Duration("duration", elapsed))
	if res != nil {
		fields = append(fields, zap.Stringer("status", res.Status))
	}
	if l.cfg.payloads {
		fields = append(fields, zap.String("arguments", c.Arguments))
		if res != nil && res.Status != pipeline.ToolPending {
			fields = append(fields, zap.String("output", res.Output))
		}
	}
	return append(fields, extra...)
}

// approval logs a call that waits for a decision, and the decision a call
// ran (or was rejected) under, read from the run's state.
func (l *logMiddleware) approval(c *pipeline.ToolCall, res *pipeline.ToolResult) {
	run := c.Turn.Run
	if res.Status == pipeline.ToolPending {
		if ce := l.log.Check(zap.InfoLevel, "approval requested"); ce != nil {
			ce.Write(zap.String("run_id", run.ID()), zap.Int("turn", c.Turn.Number),
				zap.String("tool", c.Name), zap.String("call_id", c.CallID))
		}
		return
	}
	d, exact, ok := run.DecisionFor(c.Name, c.CallID)
	if !ok {
		return
	}
	lvl := zap.InfoLevel
	if !exact {
		lvl = zap.DebugLevel // a standing "always" decision applies to every call of the tool
	}
	if ce := l.log.Check(lvl, "approval decision"); ce != nil {
		fields := []zap.Field{
			zap.String("run_id", run.ID()), zap.Int("turn", c.Turn.Number), zap.String("tool", c.Name),
			zap.String("call_id", c.CallID), zap.Stringer("verdict", d.Verdict), zap.Bool("always", !exact && d.Always),
		}
		if l.cfg.payloads && d.Message != "" {
			fields = append(fields, zap.String("message", d.Message))
		}
		ce.Write(fields...)
	}
}

// guardrails logs the guardrail results a stage added: the turn (callID
// "") logs the input and output guardrails, a tool call the tool guardrails
// of its call. A nested run's results (their Owner set), which the outer
// run's state records too, are left to the nested run's own stages, so each
// is logged once.
func (l *logMiddleware) guardrails(run *state.Run, results []state.GuardrailResult, callID string) {
	for _, g := range results {
		if g.Owner != "" {
			continue // a nested run's, recorded by its own stages
		}
		toolStage := g.Stage == state.StageToolInput || g.Stage == state.StageToolOutput
		if callID == "" && toolStage || callID != "" && (!toolStage || g.CallID != callID) {
			continue
		}
		lvl, msg := zap.DebugLevel, "guardrail passed"
		if g.Tripped {
			lvl, msg = zap.WarnLevel, "guardrail tripped"
		}
		ce := l.log.Check(lvl, msg)
		if ce == nil {
			continue
		}
		fields := []zap.Field{
			zap.String("run_id", run.ID()), zap.Int("turn", g.Turn),
			zap.String("guardrail", g.Name), zap.Stringer("stage", g.Stage),
		}
		if g.CallID != "" {
			fields = append(fields, zap.String("call_id", g.CallID))
		}
		if g.Behavior != "" {
			fields = append(fields, zap.String("behavior", g.Behavior))
		}
		if l.cfg.payloads {
			if g.Message != "" {
				fields = append(fields, zap.String("message", g.Message))
			}
			if len(g.Info) > 0 {
				fields = append(fields, zap.ByteString("info", g.Info))
			}
		}
		ce.Write(fields...)
	}
}

// levelOf is the level of a run's or turn's error: a guardrail's verdict
// and a cancellation are expected outcomes (warn), anything else is an
// error.
func levelOf(err error) zapcore.Level {
	switch {
	case errors.Is(err, pipeline.ErrInputRejected), errors.Is(err, pipeline.ErrOutputRejected),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return zap.WarnLevel
	}
	return zap.ErrorLevel
}

var (
	_ zapcore.ArrayMarshaler  = itemsArray(nil)
	_ zapcore.ObjectMarshaler = itemObject{}
)

// itemsArray logs items as {kind, name, text} objects.
type itemsArray []state.Item

func (a itemsArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, it := range a {
		if err := enc.AppendObject(itemObject{it}); err != nil {
			return err
		}
	}
	return nil
}

type itemObject struct{ it state.Item }

func (o itemObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("kind", o.it.Kind().String())
	if name := o.it.Name(); name != "" {
		enc.AddString("name", name)
	}
	enc.AddString("text", o.it.Text())
	return nil
}
