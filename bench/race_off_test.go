//go:build !race

package bench_test

// raceEnabled reports whether the test binary was built with -race, which
// changes allocation counts (sync.Pool drops items at random under it).
const raceEnabled = false
