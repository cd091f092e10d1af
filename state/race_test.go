//go:build race

package state

// raceEnabled reports a build with the race detector, under which
// sync.Pool drops what it is given at random: pooling is not pinned then.
const raceEnabled = true
