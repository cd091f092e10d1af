//go:build tools

// This file pins the modules turnkit's packages are built on, so that the
// module graph is fixed in one place while the packages that use them grow.
package turnkit

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/invopop/jsonschema"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/redis/go-redis/v9"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/sdk"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "go.opentelemetry.io/otel/trace"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "gonum.org/v1/plot"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
