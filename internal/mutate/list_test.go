package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// TestListApplies keeps docs/mutations.txt in step with the code: every
// mutation finds its text exactly once, names packages that exist, and
// every invariant has one. It runs in CI; the mutations themselves run
// only with `go run ./internal/mutate`.
func TestListApplies(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "docs", "mutations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	mutants, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[int]int{}
	for _, m := range mutants {
		covered[m.Invariant]++
		if err := m.Check(root); err != nil {
			t.Error(err)
		}
		for _, tc := range m.Tests {
			if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(tc.Package))); err != nil || !fi.IsDir() {
				t.Errorf("mutant %s: test package %s is not a directory", m.ID, tc.Package)
			}
		}
	}
	for inv := 1; inv <= 14; inv++ {
		if covered[inv] == 0 {
			t.Errorf("invariant %d has no mutation", inv)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good := "id: x\ninvariant: 3\nsummary: s\nfile: a/b.go\nfind: f\nreplace: r\ntest: ./a ^T$\n"
	if ms, err := Parse([]byte(good)); err != nil || len(ms) != 1 || ms[0].Tests[0] != (TestCmd{"./a", "^T$"}) {
		t.Fatalf("Parse(good) = %+v, %v", ms, err)
	}
	tests := []struct {
		name, give, want string
	}{
		{"no colon", "id x\n", "want \"name: value\""},
		{"unknown field", strings.Replace(good, "summary", "summery", 1), "unknown field"},
		{"invariant out of range", strings.Replace(good, "invariant: 3", "invariant: 15", 1), "not 1 to 14"},
		{"no test", strings.Replace(good, "test: ./a ^T$\n", "", 1), "names no test"},
		{"test without pattern", strings.Replace(good, "./a ^T$", "./a", 1), "a package and a -run pattern"},
		{"replace equals find", strings.Replace(good, "replace: r", "replace: f", 1), "replace equals find"},
		{"path outside", strings.Replace(good, "a/b.go", "../b.go", 1), "not a path inside"},
		{"repeated id", good + "\n" + good, "repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.give)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestMutateNeedsOneMatch(t *testing.T) {
	m := Mutant{ID: "x", File: "f.go", Find: "a", Replace: "b"}
	if got, err := m.mutate([]byte("xay")); err != nil || string(got) != "xby" {
		t.Errorf("mutate(xay) = %q, %v; want xby", got, err)
	}
	for _, give := range []string{"xyz", "aa"} {
		if _, err := m.mutate([]byte(give)); err == nil || !strings.Contains(err.Error(), "out of date") {
			t.Errorf("mutate(%q) = %v, want an out-of-date error", give, err)
		}
	}
}

func TestAlternatives(t *testing.T) {
	tests := map[string][]string{
		"^TestA$":           {"TestA"},
		"^(TestA|TestB.*)$": {"TestA", "TestB.*"},
		"^TestA$/sub":       {"TestA"},
		"TestA":             {"TestA"},
	}
	for give, want := range tests {
		if got := Alternatives(give); !slices.Equal(got, want) {
			t.Errorf("Alternatives(%q) = %q, want %q", give, got, want)
		}
	}
}
