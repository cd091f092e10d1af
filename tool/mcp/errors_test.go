package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/tool/mcp"
)

// TestErrorKindsMatchSentinels: every error of the package matches its
// sentinel with errors.Is through a wrapper, an *Error also its cause,
// and errors.As finds the typed error.
func TestErrorKindsMatchSentinels(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	tests := []struct {
		err  error
		want []error
	}{
		{mcp.NewError("s", "call", "t", mcp.ErrTransport, cause), []error{mcp.ErrTransport, cause}},
		{mcp.NewError("s", "call", "t", mcp.ErrServerExited, cause), []error{mcp.ErrServerExited, cause}},
		{mcp.NewError("s", "call", "t", mcp.ErrTimeout, nil), []error{mcp.ErrTimeout}},
		{mcp.NewError("s", "connect", "", mcp.ErrProtocol, cause), []error{mcp.ErrProtocol, cause}},
		{mcp.NewError("s", "call", "t", context.Canceled, nil), []error{context.Canceled}},
		{&mcp.Error{Server: "s", Op: "call", Err: cause}, []error{mcp.ErrTransport, cause}},
		{&mcp.ToolError{Server: "s", Tool: "t", Output: "no"}, []error{mcp.ErrToolFailed}},
		{&mcp.DuplicateToolError{Name: "t"}, []error{mcp.ErrDuplicateTool}},
		{&mcp.ConfigError{Server: "s", Reason: "no command"}, []error{mcp.ErrInvalidServer}},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("outer: %w", tt.err)
		for _, w := range tt.want {
			if !errors.Is(wrapped, w) {
				t.Errorf("%v: errors.Is(%v) = false", tt.err, w)
			}
		}
		if e, ok := errors.AsType[*mcp.Error](wrapped); ok {
			for _, other := range []error{mcp.ErrTransport, mcp.ErrServerExited, mcp.ErrTimeout, mcp.ErrProtocol} {
				if other != tt.want[0] && errors.Is(e, other) {
					t.Errorf("%v: matches %v too", e, other)
				}
			}
		}
	}
	if got := mcp.NewError("s", "call", "t", mcp.ErrTimeout, nil).Error(); got != `mcp: server "s": call "t": timeout` {
		t.Errorf("Error() = %q", got)
	}
}
