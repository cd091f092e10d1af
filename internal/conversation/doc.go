// Package conversation holds turnkit's tests of a long conversation (one
// short run per user message on one session) through the crash-safe chain
// on every backend: what each message stores, reads and resumes. It has no
// code of its own; it lives under internal so that its test imports (every
// database driver) never reach a user's module graph.
package conversation
