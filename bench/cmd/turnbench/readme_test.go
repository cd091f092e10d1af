package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// oldReadme is a README whose table an earlier run wrote, itself with a
// before column from the run before it.
const oldReadme = `# bench

Prose above the table.

` + tableBegin + `
Run of 2025-12-31 22:00 UTC on old cpu (2 cores), go1.25, Node.js v20.
The column before holds the figures of the table this one replaced (run of 2025-12-01 00:00 UTC) for the rows whose ratio or allocations moved by more than 10%.

#### Per turn, one turn per iteration, at h items of history (ratio: to the bare loop at the same h)

| scenario | ns/unit | allocs/unit | B/unit | ratio | before |
|---|--:|--:|--:|--:|--:|
| bare/history=10 | 602 ns/turn | 10.1 | 1179 | base |  |
| runner/history=10 | 1.46 µs/turn | 15.5 | 2335 | 2.43× | 9.99×, 99 allocs |
| bare/history=10000 | 668 ns/turn | 10.8 | 1196 | base |  |
| runner/history=10000 | 1.62 µs/turn | 22 | 2804 | 2.42× |  |

#### Per turn with middleware, history of 10 items (ratio: to the bare loop)

| scenario | ns/unit | allocs/unit | B/unit | ratio |
|---|--:|--:|--:|--:|
| logging/history=10 (a note) | 1.80 µs/turn | 15.5 | 2335 | 2.99× |

#### Flat with history: cost per turn at 10000 items ÷ at 10 items

| scenario | time | allocs |
|---|--:|--:|
| turn/runner | 9.00× | 9.00× |
` + tableEnd + `

Prose below the table.
`

func TestRegenerateKeepsMovedFigures(t *testing.T) {
	r := sampleReport()
	// The old table names it logging/history=10; the run in names it
	// middleware/logging, so it is new here and has no before figures.
	md, table, err := regenerate(oldReadme, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md, "# bench\n\nProse above the table.\n\n"+tableBegin+"\n") ||
		!strings.HasSuffix(md, tableEnd+"\n\nProse below the table.\n") {
		t.Errorf("the text around the table changed:\n%s", md)
	}
	if !strings.Contains(md, table) {
		t.Errorf("the README does not hold the table returned")
	}
	for _, want := range []string{
		"(run of 2025-12-31 22:00 UTC) for the rows whose ratio or allocations moved by more than 10%.",
		"| scenario | ns/unit | allocs/unit | B/unit | ratio | before |",
		// allocations 15.5 → 22: moved; the older before column is not carried.
		"| runner/history=10 | 2.50 µs/turn | 22 | 3000 | 2.50× | 2.43×, 15.5 allocs |",
		// a base row that kept its allocations: nothing beside it.
		"| bare/history=10 | 1.00 µs/turn | 10 | 1000 | base |  |",
		// 2.42× → 2.50× is 3%: not moved.
		"| runner/history=10000 | 2.75 µs/turn | 22 | 3000 | 2.50× |  |",
		"| logging | skipped: middleware/logging has not landed | | | |  |",
		// a row the old table lacked.
		"| runner/turns=10 | 2.00 µs/turn | 20 | 0 | 2.00× |  |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "9.99×") || strings.Contains(table, "9.00×") {
		t.Errorf("the table carries figures older than the table it replaced:\n%s", table)
	}

	// The same run again: nothing moved, so no before figures at all.
	again, _, err := regenerate(md, sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`\d allocs \|\n`).MatchString(again) {
		t.Errorf("a run regenerated over its own table keeps before figures:\n%s", again)
	}
}

func TestRegenerateSkippedRowKeepsItsFigures(t *testing.T) {
	old := tableBegin + "\nRun of 2025-12-31 22:00 UTC on x.\n\n#### " + groupTitles["session"] +
		"\n\n| scenario | ns/unit | allocs/unit | B/unit | ratio |\n|---|--:|--:|--:|--:|\n" +
		"| postgres/raw-driver | 158.1 µs/commit | 31 | 3154 | base |\n" +
		"| postgres/store | 238.6 µs/commit | 53 | 4372 | 1.51× |\n" + tableEnd + "\n"
	r := &report{}
	store, raw, _ := sessionScenarios("postgres")
	store.Same = ""
	r.add(row{scenario: raw, skip: "no server"})
	r.add(row{scenario: store, skip: "no server"})
	_, table, err := regenerate(old, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| postgres/raw-driver | skipped: no server | | | | 31 allocs |",
		"| postgres/store | skipped: no server | | | | 1.51×, 53 allocs |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

func TestRegenerateWithoutMarkers(t *testing.T) {
	if _, _, err := regenerate("# bench\n\nno table here\n", sampleReport()); !errors.Is(err, errNoTable) {
		t.Errorf("err = %v, want errNoTable", err)
	}
}
