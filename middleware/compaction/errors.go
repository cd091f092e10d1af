package compaction

import (
	"errors"
	"fmt"
)

// ErrCompaction means a compaction failed: the compactor's error, or a
// view that cannot be recorded. It is wrapped by [*Error].
var ErrCompaction = errors.New("compaction: compaction failed")

// An Error reports a compaction that failed on a run's turn; the model
// call is not made, and the run's view is unchanged.
type Error struct {
	RunID string
	Turn  int
	Err   error
}

// Error says what failed, where, and why.
func (e *Error) Error() string {
	return fmt.Sprintf("compaction: run %s turn %d: %v", e.RunID, e.Turn, e.Err)
}

// Unwrap returns [ErrCompaction] and the cause.
func (e *Error) Unwrap() []error { return []error{ErrCompaction, e.Err} }
