package retry

import (
	"errors"
	"strconv"
)

// Why a model call stopped before its attempts ran out; an [*Error]'s
// Stopped matches one of them (or the context's error) with errors.Is.
var (
	// ErrDeadline means the wait before the next attempt would have ended
	// after the context's deadline, so no attempt was made.
	ErrDeadline = errors.New("retry: the next attempt would start after the context's deadline")
	// ErrStreamed means the failed attempt's events had reached the run's
	// stream: the consumer saw part of that answer, so the call is not
	// made again.
	ErrStreamed = errors.New("retry: the failed attempt's events reached the stream")
)

// An Error is the error of a model call that failed after the middleware
// made its attempts: how many, over how many models, why it stopped
// early (if it did), and the last attempt's error, which it wraps, so
// errors.As finds the last *pipeline.ModelError through it.
type Error struct {
	// Attempts counts the model calls made, fallbacks' included.
	Attempts int
	// Models counts the models called: 1, plus the fallbacks tried.
	Models int
	// Stopped says why no further attempt was made although the error was
	// retryable and attempts were left: [ErrDeadline], [ErrStreamed] or
	// the context's error. It is nil when the attempts ran out or the
	// error was not one to retry.
	Stopped error
	// Err is the last attempt's error.
	Err error
}

// Error says what failed, where, and why.
func (e *Error) Error() string {
	s := "retry: model call failed after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	if e.Models > 1 {
		s += " on " + strconv.Itoa(e.Models) + " models"
	}
	if e.Stopped != nil {
		s += " (stopped: " + trim(e.Stopped.Error()) + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the last attempt's error and, when set, why the
// retries stopped.
func (e *Error) Unwrap() []error {
	if e.Stopped != nil {
		return []error{e.Err, e.Stopped}
	}
	return []error{e.Err}
}

// trim drops this package's prefix from msg, so that a message names the
// package once.
func trim(msg string) string {
	const prefix = "retry: "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}
