// Package crossbackend holds the tests that run one package's behaviour
// against every real session backend: the OpenAI adapter's hosted and
// unknown output items stored in SQLite, PostgreSQL and Redis. They live
// here, in a package no user imports, so that a module importing
// model/openai does not get the backends' drivers (pgx, go-redis, SQLite)
// in its go.sum through model/openai's tests.
package crossbackend
