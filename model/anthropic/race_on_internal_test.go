//go:build race

package anthropic

// raceEnabled: the race detector drops sync.Pool items at random, so
// allocation counts are not checked under it.
const raceEnabled = true
