package state

import (
	"fmt"
	"slices"
)

// withholdInput replaces the input placed on the run's first turn by
// stored, an input guardrail's ruling on a blocked input: stored[i] takes
// the position of the i-th input item, and input items beyond stored are
// removed, their positions left free. The next save of the run is a full
// one, so a store that held the input rewrites the run without it.
func (r *Run) withholdInput(stored []Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(stored) > len(r.input) {
		return fmt.Errorf("state: withhold the input of run %s: %d items for %d input items", r.id, len(stored), len(r.input))
	}
	by := make(map[int64]Item, len(r.input))
	input := make([]Item, 0, len(stored))
	for i, in := range r.input {
		if i < len(stored) {
			it := stored[i].WithSeq(in.seq)
			if !it.kind.Valid() {
				return fmt.Errorf("state: withhold the input of run %s: item %d: invalid kind", r.id, i)
			}
			by[in.seq] = it
			input = append(input, it)
		} else {
			by[in.seq] = Item{}
		}
	}
	items := make([]Item, 0, len(r.items)) // a copy: views taken earlier stay as they were
	from := r.ctxFrom
	for i, it := range r.items {
		repl, ok := by[it.seq]
		switch {
		case !ok:
			items = append(items, it)
			continue
		case repl.IsZero():
			if i < r.ctxFrom {
				from--
			}
		default:
			items = append(items, repl)
		}
	}
	r.input, r.items, r.ctxFrom = input, items, from
	r.completed = nil // built again from the items if asked
	r.journal = slices.DeleteFunc(r.journal, func(seq int64) bool { _, ok := by[seq]; return ok })
	for _, it := range input {
		r.journalLocked(it.seq)
	}
	r.base.known = false // the store's copy may hold the input: save it whole
	return nil
}
