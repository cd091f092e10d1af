package scenario

import "time"

// A cpuClock adds up the process's CPU time (user and system, of every
// thread: the store's work, the collector's, the runtime's) over the
// timed stretches of a benchmark, which begin and end mark as the
// benchmark starts and stops its timer. Unlike the wall time, it leaves
// out what the process waited for (a sync of the disk, another process
// holding the core), so the ratio of two scenarios' CPU time per turn
// answers "how much more work" on a shared or slow-disk machine. A clock
// on a system without the figure (processCPU's ok false) reports none.
type cpuClock struct {
	running bool
	ok      bool
	start   time.Duration
	total   time.Duration
	turns   int
}

// begin starts a timed stretch unless one is running.
func (c *cpuClock) begin() {
	if c == nil || c.running {
		return
	}
	c.start, c.ok = processCPU()
	c.running = true
}

// end ends the timed stretch running, if any.
func (c *cpuClock) end() {
	if c == nil || !c.running {
		return
	}
	now, ok := processCPU()
	c.ok = c.ok && ok
	c.total += now - c.start
	c.running = false
}

// perTurn returns the CPU time per counted turn, in ns, and whether the
// clock has one.
func (c *cpuClock) perTurn() (float64, bool) {
	if c == nil || !c.ok || c.turns == 0 {
		return 0, false
	}
	return float64(c.total.Nanoseconds()) / float64(c.turns), true
}

// cpuMetric is the unit of the CPU time a scenario reports per turn
// (testing.B.ReportMetric); turnbench reads it by this name.
const cpuMetric = "cpu-ns/turn"

// CPUMetric returns the unit, "cpu-ns/turn", under which a scenario
// reports its process CPU time per turn.
func CPUMetric() string { return cpuMetric }

// The metrics of a scenario that interleaves its turns with a raw
// driver's (pairedTurns): its own time per turn, the driver's, and their
// ratio; turnbench reads them by these names.
const (
	pairedOwnMetric   = "store-ns/turn"
	pairedSameMetric  = "same-ns/turn"
	pairedRatioMetric = "store/same"
)

// PairedMetrics returns the units under which a scenario whose turns
// are interleaved with the raw driver's same writes reports its own time
// per turn, the driver's, and their ratio.
func PairedMetrics() (own, same, ratio string) {
	return pairedOwnMetric, pairedSameMetric, pairedRatioMetric
}
