// Package retry is turnkit's retry and fallback middleware for the model
// stage: a model call that fails with a retryable error is made again,
// after an exponential backoff with jitter or the wait the server asked
// for (Retry-After), up to a number of attempts and never past the
// context's deadline; when the agent's model keeps failing, the call falls
// back to other models, of the same provider or another, on a class of
// errors of each one's choosing.
//
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
//		Tracing:     tracing.Middleware(),
//		Persistence: persistence.Middleware(store),
//		Extra: []pipeline.Middleware{retry.Middleware(
//			retry.WithAttempts(4),
//			retry.WithFallback(retry.Fallback{Model: other, Name: "other-model"}),
//		)},
//	}.Middleware()...))
//
// # Ordering
//
// Put it innermost, in the Extra place of a [pipeline.Stack]: then the
// guardrails, approval and persistence outside it see one model call,
// whatever it took, and the tracing middleware records one chat span per
// attempt, each with its error, under the turn's span.
//
// # What is retried
//
// By default the errors the model adapter marked retryable ([Retryable]:
// 429, 408, 409, 5xx, network failures, cut streams); [WithRetryOn] sets
// another [Class]. A cancelled run is never retried, and a streamed call
// is retried only while none of its events reached the run's stream: once
// the consumer saw part of an answer, another answer would contradict it.
// A failed attempt returns no response, so nothing of it is recorded in
// the run, a checkpoint or the session.
//
// Model adapters may retry on their own (openai-go retries twice by
// default): give the client option.WithMaxRetries(0) so that the retries
// happen here, traced and bounded by one policy.
//
// # Errors
//
// When the attempts failed, the error is an [*Error]: how many attempts on
// how many models, why they stopped early if they did ([ErrDeadline],
// [ErrStreamed]), and the last attempt's error, which it wraps.
//
// # Tests
//
// [WithSleep], [WithClock] and [WithRandom] replace the timer, the clock
// and the jitter, so tests run without waiting and assert the waits.
package retry
