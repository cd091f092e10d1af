//go:build race

package openai

// raceEnabled: the race detector changes allocation counts, so they are
// not checked under it.
const raceEnabled = true
