//go:build !unix

package scenario

import "time"

// processCPU reports no figure: this system's process CPU time is not
// read here.
func processCPU() (time.Duration, bool) { return 0, false }
