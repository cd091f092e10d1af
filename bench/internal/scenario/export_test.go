package scenario

// Unexported helpers that the black-box tests of package scenario_test
// check the accounting of.
var (
	MakeHistory = makeHistory
	TurnsPerRun = turnsPerRun
	RunnerTurns = runnerTurns
)
