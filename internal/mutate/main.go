// Command mutate is turnkit's mutation test: it applies each mutation
// listed in docs/mutations.txt to a scratch copy of the repository, one at
// a time, runs the tests the list names for it, and reports which
// mutations the tests caught and which survived, with a score.
//
// Run it from the repository root, with the servers up for the backends'
// tests (see docs/invariants.md), before closing any change to the code
// that enforces an invariant:
//
//	go run ./internal/mutate                 # every mutation
//	go run ./internal/mutate -run '^9'       # the mutations whose ID matches
//	go run ./internal/mutate -list other.txt # another list
//
// The working tree is never touched: the tracked and untracked (not
// ignored) files are copied into a temporary directory, which is removed
// at the end. Before any mutation the named tests run on the unmutated copy
// and must pass. A mutation that does not compile is reported as invalid
// and is not scored. The exit status is 0 only if every valid mutation was
// caught.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	list := flag.String("list", "docs/mutations.txt", "the list of mutations")
	run := flag.String("run", "", "only the mutations whose ID matches this regular expression")
	timeout := flag.Duration("timeout", 10*time.Minute, "the limit on one go test command")
	verbose := flag.Bool("v", false, "print the output of the tests that caught each mutation")
	flag.Parse()
	if err := mutateAll(*list, *run, *timeout, *verbose, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func mutateAll(listPath, only string, timeout time.Duration, verbose bool, w io.Writer) error {
	src, err := os.ReadFile(listPath)
	if err != nil {
		return err
	}
	mutants, err := Parse(src)
	if err != nil {
		return fmt.Errorf("%s: %w", listPath, err)
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("-run: %w", err)
		}
		mutants = filterMutants(mutants, re)
	}
	if len(mutants) == 0 {
		return errors.New("no mutations to run")
	}
	for _, m := range mutants {
		if err := m.Check("."); err != nil {
			return err
		}
	}
	scratch, err := os.MkdirTemp("", "turnkit-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := copyTree(".", scratch); err != nil {
		return fmt.Errorf("copying the repository to %s: %w", scratch, err)
	}
	fmt.Fprintf(w, "scratch copy in %s; %d mutations\n", scratch, len(mutants))

	fmt.Fprintln(w, "--- baseline: the named tests on the unmutated copy")
	seen := map[string]bool{}
	listed := map[string][]string{}
	for _, m := range mutants {
		for _, tc := range m.Tests {
			key := tc.Package + " " + tc.Run
			if seen[key] {
				continue
			}
			seen[key] = true
			if err := checkNames(scratch, tc, listed, timeout); err != nil {
				return err
			}
			if out, err := goTest(scratch, tc, timeout); err != nil {
				return fmt.Errorf("baseline %s -run %q fails without any mutation: %w\n%s", tc.Package, tc.Run, err, out)
			}
		}
	}

	caught, invalid := 0, 0
	var survived []string
	for _, m := range mutants {
		start := time.Now()
		res, out, err := m.Apply(scratch, timeout)
		if err != nil {
			return err
		}
		switch res {
		case resultCaught:
			caught++
		case resultInvalid:
			invalid++
		case resultSurvived:
			survived = append(survived, m.ID)
		}
		fmt.Fprintf(w, "%-9s %-6s inv %-2d %s (%s)\n", res, m.ID, m.Invariant, m.Summary, time.Since(start).Round(time.Second))
		if res == resultInvalid || verbose && res == resultCaught {
			fmt.Fprintf(w, "%s\n", indent(tail(out, 30)))
		}
	}
	scored := len(mutants) - invalid
	fmt.Fprintf(w, "--- score: %d of %d caught", caught, scored)
	if scored > 0 {
		fmt.Fprintf(w, " (%.0f%%)", 100*float64(caught)/float64(scored))
	}
	if invalid > 0 {
		fmt.Fprintf(w, "; %d invalid (do not compile)", invalid)
	}
	fmt.Fprintln(w)
	if len(survived) > 0 || invalid > 0 {
		return fmt.Errorf("survived: %s; invalid: %d", strings.Join(survived, ", "), invalid)
	}
	return nil
}

func filterMutants(ms []Mutant, re *regexp.Regexp) []Mutant {
	var out []Mutant
	for _, m := range ms {
		if re.MatchString(m.ID) {
			out = append(out, m)
		}
	}
	return out
}

type result string

const (
	resultCaught   result = "caught"
	resultSurvived result = "SURVIVED"
	resultInvalid  result = "INVALID"
)

// Apply writes the mutation into the copy at root, builds the mutated
// package, runs the mutant's tests until one fails, and restores the file.
func (m Mutant) Apply(root string, timeout time.Duration) (result, []byte, error) {
	path := filepath.Join(root, filepath.FromSlash(m.File))
	orig, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	mutated, err := m.mutate(orig)
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return "", nil, err
	}
	defer os.WriteFile(path, orig, 0o644)

	pkg := "./" + filepath.ToSlash(filepath.Dir(m.File))
	if out, err := command(root, timeout, "go", "vet", pkg); err != nil {
		return resultInvalid, out, nil
	}
	for _, tc := range m.Tests {
		if out, err := goTest(root, tc, timeout); err != nil {
			return resultCaught, out, nil
		}
	}
	return resultSurvived, nil, nil
}

// checkNames makes sure that each alternative of a test's -run pattern
// names a test of its package: a pattern that matches nothing passes
// every mutation silently. listed caches each package's tests.
func checkNames(root string, tc TestCmd, listed map[string][]string, timeout time.Duration) error {
	names, ok := listed[tc.Package]
	if !ok {
		out, err := command(root, timeout, "go", "test", "-list", ".", tc.Package)
		if err != nil {
			return fmt.Errorf("go test -list %s: %w\n%s", tc.Package, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "Test") {
				names = append(names, strings.TrimSpace(l))
			}
		}
		listed[tc.Package] = names
	}
	for _, alt := range Alternatives(tc.Run) {
		re, err := regexp.Compile("^(?:" + alt + ")$")
		if err != nil {
			return fmt.Errorf("%s -run %q: %w", tc.Package, tc.Run, err)
		}
		if !slices.ContainsFunc(names, re.MatchString) {
			return fmt.Errorf("%s -run %q: %q names no test of the package (the list is out of date)", tc.Package, tc.Run, alt)
		}
	}
	return nil
}

// Alternatives splits a -run pattern of the form ^Name$ or ^(A|B|C)$
// into its top-level test names (each may itself be a pattern, such as
// TestStale.*); anything after a / (subtests) is ignored.
func Alternatives(run string) []string {
	run, _, _ = strings.Cut(run, "/")
	run = strings.TrimSuffix(strings.TrimPrefix(run, "^"), "$")
	if strings.HasPrefix(run, "(") && strings.HasSuffix(run, ")") {
		run = run[1 : len(run)-1]
	}
	return strings.Split(run, "|")
}

func goTest(root string, tc TestCmd, timeout time.Duration) ([]byte, error) {
	return command(root, timeout, "go", "test", "-count=1", "-timeout", timeout.String(), tc.Package, "-run", tc.Run)
}

func command(dir string, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// copyTree copies the files git knows in src (tracked, and untracked ones
// that are not ignored) into dst.
func copyTree(src, dst string) error {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(src, name)
		fi, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
