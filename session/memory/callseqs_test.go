package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCallSeqs adds and removes the positions of one call ID in random
// orders and checks, after each change, the latest position before every
// seq against a sorted slice of the same positions.
func TestCallSeqs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var (
			c    callSeqs
			want []int64
		)
		check := func(op string) {
			t.Helper()
			for seq := int64(1); seq <= 12; seq++ {
				i, _ := slices.BinarySearch(want, seq)
				w := int64(0)
				if i > 0 {
					w = want[i-1]
				}
				if got := c.before(seq); got != w {
					t.Fatalf("round %d, after %s: before(%d) = %d, want %d (positions %v, held %d %v)", round, op, seq, got, w, want, c.first, c.rest)
				}
			}
		}
		for _, seq := range rng.Perm(10)[:1+rng.IntN(4)] {
			c.add(int64(seq) + 1)
			want = append(want, int64(seq)+1)
			slices.Sort(want)
			check("add")
		}
		for len(want) > 0 {
			seq := want[rng.IntN(len(want))]
			want = slices.DeleteFunc(want, func(s int64) bool { return s == seq })
			if empty := c.remove(seq); empty != (len(want) == 0) {
				t.Fatalf("round %d: remove(%d) reported empty %v with %v left", round, seq, empty, want)
			}
			check("remove")
		}
	}
}
