// Package handoff_test holds the cross-provider handoff resumed from a
// SQLite checkpoint in a fresh process (OpenAI's Responses API hands off to
// Anthropic and back). It lives here, not beside model/anthropic, so that
// a module importing model/anthropic does not get the SQLite driver in its
// go.sum through the package's tests: with it beside the package, a user
// module importing pipeline and model/anthropic had 79 modules with source
// hashes after go mod tidy; without it, 71, of which 57 come from the
// Anthropic SDK's own tests (its Bedrock and Vertex clients, the MCP SDK).
package handoff_test
