// Package handoff_test holds the three-provider handoff resumed from a
// SQLite checkpoint in a fresh process: OpenAI's Responses API hands off
// to Anthropic, which pauses on an approval, and after the resume hands
// off to Gemini. It lives here, in a package no user imports, so that a
// module importing model/gemini does not get the SQLite driver and the
// Anthropic SDK in its go.sum through the package's tests.
package handoff_test
