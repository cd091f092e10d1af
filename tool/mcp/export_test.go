package mcp

// NewError returns an *Error of the given kind, for tests of the error's
// methods.
func NewError(server, op, tool string, kind, err error) *Error {
	return &Error{Server: server, Op: op, Tool: tool, kind: kind, Err: err}
}
