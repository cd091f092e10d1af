// Package backends runs the persistence middleware's fault suite
// (internal/faultsuite) on the real session backends: SQLite, PostgreSQL
// and Redis. It has tests only, here rather than in persistence's own
// tests so that a module importing middleware/persistence does not get the
// database drivers in its go.sum.
package backends
