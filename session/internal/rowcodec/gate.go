package rowcodec

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/turnkit/turnkit/session"
)

// A Gate is a store's open/closed flag and its error translation, named by
// the store's package. The zero Gate needs its Pkg set; it is open.
type Gate struct {
	Pkg    string
	closed atomic.Bool
}

// Close closes the gate and reports whether this call closed it.
func (g *Gate) Close() bool { return !g.closed.Swap(true) }

// Closed reports whether the gate is closed.
func (g *Gate) Closed() bool { return g.closed.Load() }

// Begin checks, before session operation op, that the store is open and ctx
// is live.
func (g *Gate) Begin(ctx context.Context, op, sessionID string) error {
	if g.closed.Load() {
		return fmt.Errorf("%s: %s session %q: %w", g.Pkg, op, sessionID, session.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %s session %q: %w", g.Pkg, op, sessionID, err)
	}
	return nil
}

// Wrap translates the error of session operation op (see [Wrap]).
func (g *Gate) Wrap(ctx context.Context, op, sessionID string, err error) error {
	return Wrap(ctx, g.Pkg, op, sessionID, g.closed.Load(), err)
}

// BeginRun checks, before checkpoint operation op, that the store is open
// and ctx is live; the error is a *state.StoreError.
func (g *Gate) BeginRun(ctx context.Context, op, runID string) error {
	if g.closed.Load() {
		return StoreErr(ctx, g.Pkg, op, runID, true, session.ErrClosed)
	}
	return StoreErr(ctx, g.Pkg, op, runID, false, ctx.Err())
}

// WrapRun translates the error of checkpoint operation op (see [StoreErr]).
func (g *Gate) WrapRun(ctx context.Context, op, runID string, err error) error {
	return StoreErr(ctx, g.Pkg, op, runID, g.closed.Load(), err)
}
