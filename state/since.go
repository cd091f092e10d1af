package state

// GuardrailCount returns the number of guardrail results recorded so far.
// With [Run.GuardrailResultsSince] it lets an observer (tracing, logging)
// take only the results a stage added, in O(new results).
func (r *Run) GuardrailCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.guards)
}

// GuardrailResultsSince returns copies of the guardrail results recorded
// after the first n, in the order they were recorded; nil if there are
// none. n below zero counts from the first result.
func (r *Run) GuardrailResultsSince(n int) []GuardrailResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < 0 {
		n = 0
	}
	if n >= len(r.guards) {
		return nil
	}
	return cloneGuards(r.guards[n:])
}
