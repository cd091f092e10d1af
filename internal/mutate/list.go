package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Mutant is one listed mutation: in File, the one occurrence of Find is
// replaced by Replace, which breaks the invariant numbered Invariant; one
// of Tests must then fail.
type Mutant struct {
	ID        string
	Invariant int
	Summary   string
	File      string // slash-separated, relative to the repository root
	Find      string
	Replace   string
	Tests     []TestCmd
	Line      int // where the entry starts in the list
}

// A TestCmd is a go test command: a package pattern and a -run pattern.
type TestCmd struct {
	Package string
	Run     string
}

// Parse reads a list of mutations. Entries are separated by blank lines;
// lines starting with # are comments. Each entry has one line per field,
// "name: value", with the value's surrounding spaces ignored:
//
//	id:        9a
//	invariant: 9
//	summary:   collect stores a call without its outcome
//	file:      middleware/persistence/ledger.go
//	find:      if _, done := l.run.Answered(it); !done {
//	replace:   if _, done := l.run.Answered(it); false && !done {
//	test:      ./middleware/persistence ^TestInvariant9_
//
// find is a substring of one line of the file that must occur exactly
// once; replace may be empty (the text is deleted). test may repeat; its
// value is a package and a -run pattern separated by spaces.
func Parse(src []byte) ([]Mutant, error) {
	var out []Mutant
	var cur *Mutant
	flush := func() error {
		if cur == nil {
			return nil
		}
		if err := cur.validate(); err != nil {
			return err
		}
		out = append(out, *cur)
		cur = nil
		return nil
	}
	ids := map[string]bool{}
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if trimmed == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		name, value, ok := strings.Cut(trimmed, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"name: value\", got %q", n, trimmed)
		}
		value = strings.TrimSpace(value)
		if cur == nil {
			cur = &Mutant{Line: n}
		}
		switch name {
		case "id":
			if ids[value] {
				return nil, fmt.Errorf("line %d: id %q repeated", n, value)
			}
			ids[value] = true
			cur.ID = value
		case "invariant":
			v, err := strconv.Atoi(value)
			if err != nil || v < 1 || v > 14 {
				return nil, fmt.Errorf("line %d: invariant %q is not 1 to 14", n, value)
			}
			cur.Invariant = v
		case "summary":
			cur.Summary = value
		case "file":
			cur.File = value
		case "find":
			cur.Find = value
		case "replace":
			cur.Replace = value
		case "test":
			f := strings.Fields(value)
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: test wants a package and a -run pattern, got %q", n, value)
			}
			cur.Tests = append(cur.Tests, TestCmd{Package: f[0], Run: f[1]})
		default:
			return nil, fmt.Errorf("line %d: unknown field %q", n, name)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Mutant) validate() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("entry at line %d has no id", m.Line)
	case m.Invariant == 0:
		return fmt.Errorf("mutant %s (line %d) has no invariant", m.ID, m.Line)
	case m.Summary == "":
		return fmt.Errorf("mutant %s (line %d) has no summary", m.ID, m.Line)
	case m.File == "" || filepath.IsAbs(m.File) || strings.Contains(m.File, ".."):
		return fmt.Errorf("mutant %s (line %d): file %q is not a path inside the repository", m.ID, m.Line, m.File)
	case m.Find == "":
		return fmt.Errorf("mutant %s (line %d) has nothing to find", m.ID, m.Line)
	case m.Find == m.Replace:
		return fmt.Errorf("mutant %s (line %d): replace equals find", m.ID, m.Line)
	case len(m.Tests) == 0:
		return fmt.Errorf("mutant %s (line %d) names no test", m.ID, m.Line)
	}
	return nil
}

// Check reports whether the mutation applies to the repository at root:
// its file exists and holds the text to find exactly once.
func (m Mutant) Check(root string) error {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
	if err != nil {
		return fmt.Errorf("mutant %s: %w", m.ID, err)
	}
	_, err = m.mutate(src)
	return err
}

func (m Mutant) mutate(src []byte) ([]byte, error) {
	if n := bytes.Count(src, []byte(m.Find)); n != 1 {
		return nil, fmt.Errorf("mutant %s: %s holds %q %d times, want once (the list is out of date)", m.ID, m.File, m.Find, n)
	}
	return bytes.Replace(src, []byte(m.Find), []byte(m.Replace), 1), nil
}
