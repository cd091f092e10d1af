package tracing

// Version is the version of the tracing middleware, reported as the
// instrumentation scope's version.
const Version = "0.1.0"
