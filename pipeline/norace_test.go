//go:build !race

package pipeline_test

// raceEnabled reports a build with the race detector, which allocates on
// its own: allocation counts are not pinned then.
const raceEnabled = false
