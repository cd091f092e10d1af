// Package encrypt_test holds session/encrypt's tests against the real
// backends (SQLite, PostgreSQL, Redis). They live here, not beside the
// package, so that a module importing session/encrypt does not get the
// database drivers in its go.sum through the package's tests: with them
// beside it, a user module importing pipeline, session/memory and
// session/encrypt had 27 modules with source hashes after go mod tidy;
// without them, 8.
package encrypt_test
