package approval

import (
	"context"
	"slices"

	"github.com/turnkit/turnkit/pipeline"
)

// A Policy says whether a tool call needs a human approval before it runs.
// An error fails closed: the call needs approval. A Policy must be safe for
// concurrent use.
type Policy interface {
	NeedsApproval(ctx context.Context, c *pipeline.ToolCall) (bool, error)
}

// PolicyFunc adapts a function to a [Policy].
type PolicyFunc func(ctx context.Context, c *pipeline.ToolCall) (bool, error)

// NeedsApproval calls f(ctx, c).
func (f PolicyFunc) NeedsApproval(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
	return f(ctx, c)
}

// Always requires approval of every call.
func Always() Policy { return constant(true) }

// Never requires approval of no call; only tools that declare a need (see
// [pipeline.ApprovalRequirer]) are held.
func Never() Policy { return constant(false) }

type constant bool

func (c constant) NeedsApproval(context.Context, *pipeline.ToolCall) (bool, error) {
	return bool(c), nil
}

// ByTool requires approval of the calls of the named tools.
func ByTool(names ...string) Policy {
	names = slices.Clone(names)
	return PolicyFunc(func(_ context.Context, c *pipeline.ToolCall) (bool, error) {
		return slices.Contains(names, c.Name), nil
	})
}

// Any requires approval when one of ps does; it stops at the first that
// does. An error from an earlier policy fails closed at once. Nil policies
// are skipped.
func Any(ps ...Policy) Policy {
	ps = compact(ps)
	return PolicyFunc(func(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
		for _, p := range ps {
			if need, err := p.NeedsApproval(ctx, c); err != nil || need {
				return true, err
			}
		}
		return false, nil
	})
}

// All requires approval when every one of ps does (and none when ps is
// empty). An error fails closed. Nil policies are skipped.
func All(ps ...Policy) Policy {
	ps = compact(ps)
	return PolicyFunc(func(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
		if len(ps) == 0 {
			return false, nil
		}
		for _, p := range ps {
			need, err := p.NeedsApproval(ctx, c)
			if err != nil {
				return true, err
			}
			if !need {
				return false, nil
			}
		}
		return true, nil
	})
}

// Not requires approval when p does not. An error from p still fails
// closed: the call needs approval.
func Not(p Policy) Policy {
	return PolicyFunc(func(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
		need, err := p.NeedsApproval(ctx, c)
		if err != nil {
			return true, err
		}
		return !need, nil
	})
}

func compact(ps []Policy) []Policy {
	return slices.DeleteFunc(slices.Clone(ps), func(p Policy) bool { return p == nil })
}
