package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The table of a run lives in bench/README.md between these two lines;
// turnbench -readme replaces what is between them and nothing else.
const (
	tableBegin = "<!-- turnbench: the table of the run begins here (turnbench -readme regenerates it; edits inside are lost) -->"
	tableEnd   = "<!-- turnbench: the table of the run ends here -->"
)

// moved is how far a row's ratio or allocations must move, as a fraction of
// the previous figure, for the regenerated table to keep the previous one
// beside it.
const moved = 0.10

// errNoTable reports a Markdown file without the table's markers.
var errNoTable = errors.New("no turnbench table markers")

// figures are one row's figures as the table being replaced printed them.
type figures struct {
	ratio, allocs       float64
	hasRatio, hasAllocs bool
	ratioText           string // as printed, "2.43×"
	allocsText          string // as printed, "15.5"
}

// previous is the table being replaced: when it was run, and its rows by
// scenario name.
type previous struct {
	run  string
	rows map[string]figures
}

// tableIn returns the text between the markers of a Markdown file.
func tableIn(md string) (string, error) {
	i := strings.Index(md, tableBegin)
	j := strings.Index(md, tableEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("%w (%q, then %q)", errNoTable, tableBegin, tableEnd)
	}
	return md[i+len(tableBegin) : j], nil
}

// regenerate renders r as the table of md, in place of the one between the
// markers, with the replaced table's figures kept beside the rows that moved.
// It returns the new Markdown file and the table alone.
func regenerate(md string, r *report) (out, table string, err error) {
	old, err := tableIn(md)
	if err != nil {
		return "", "", err
	}
	r.prev = parsePrevious(old)
	table = r.markdown()
	i, j := strings.Index(md, tableBegin)+len(tableBegin), strings.Index(md, tableEnd)
	return md[:i] + "\n" + table + "\n" + md[j:], table, nil
}

// parsePrevious reads a table that markdown wrote: the run's date from its
// first line, and the ratio and allocations of each row of the scenario
// groups (the flatness and peer summaries are derived, and not read; a
// group whose title has changed since is read as new). A
// column after the ratio, such as an earlier run's before, is ignored: the
// history kept is one run deep.
func parsePrevious(table string) *previous {
	byTitle := map[string]string{}
	for g, t := range groupTitles {
		byTitle[t] = g
	}
	p := &previous{run: "a run of unknown date", rows: map[string]figures{}}
	group := ""
	for line := range strings.Lines(table) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Run of "):
			if date, _, ok := strings.Cut(strings.TrimPrefix(line, "Run of "), " on "); ok {
				p.run = "run of " + date
			}
		case strings.HasPrefix(line, "#### "):
			group = byTitle[strings.TrimPrefix(line, "#### ")]
		case group != "" && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 5 {
				continue
			}
			for k := range cells {
				cells[k] = strings.TrimSpace(cells[k])
			}
			name, _, _ := strings.Cut(cells[0], " (")
			if name == "scenario" || strings.HasPrefix(name, "---") || strings.HasPrefix(cells[1], "skipped") {
				continue
			}
			f := figures{ratioText: cells[4], allocsText: cells[2]}
			if pct, ok := strings.CutSuffix(cells[4], "%"); ok {
				// An adapter row's own share, printed in percent.
				f.ratio, f.hasRatio = parseFigure(pct)
				f.ratio /= 100
			} else {
				f.ratio, f.hasRatio = parseFigure(strings.TrimSuffix(cells[4], "×"))
			}
			f.allocs, f.hasAllocs = parseFigure(cells[2])
			p.rows[group+"/"+name] = f
		}
	}
	return p
}

func parseFigure(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// beforeCell is x's cell of the before column: empty without a previous
// table, for a row the previous table lacked, and for a row that moved by
// at most moved; else the previous ratio and allocations as printed.
func (r *report) beforeCell(x row) string {
	if r.prev == nil {
		return ""
	}
	f, ok := r.prev.rows[x.scenario.Name]
	if !ok || !f.movedFrom(r, x) {
		return "  |"
	}
	var parts []string
	if f.hasRatio {
		parts = append(parts, f.ratioText)
	}
	if f.hasAllocs {
		parts = append(parts, f.allocsText+" allocs")
	}
	return " " + strings.Join(parts, ", ") + " |"
}

// movedFrom reports whether x's ratio or allocations differ from f's by
// more than moved, or x has no figures where f had.
func (f figures) movedFrom(r *report, x row) bool {
	if x.skip != "" {
		return f.hasRatio || f.hasAllocs
	}
	if q, ok := r.ratio(x); ok && f.hasRatio && differs(q, f.ratio) {
		return true
	}
	return x.hasAllocs && f.hasAllocs && differs(x.allocs, f.allocs)
}

// differs reports whether now is more than moved away from then.
func differs(now, then float64) bool {
	if then == 0 {
		return now != 0
	}
	return math.Abs(now-then)/math.Abs(then) > moved
}
