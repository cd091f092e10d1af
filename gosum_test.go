package turnkit_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// coreSumLimit is the most modules with source hashes that a user module
// importing the core (pipeline, model/openai, tool) may have in its go.sum
// after go mod tidy: openai-go's 10 and a few of turnkit's tests. The
// count is stated in docs/layout.md.
const coreSumLimit = 16

// TestCoreUserGoSum builds a fresh module that imports the core with a
// replace to this tree, runs go mod tidy (offline from the module
// cache when it holds what tidy needs) and counts the modules whose
// source hashes land in its go.sum: what a user downloads and audits. Tests
// of the imported packages count, as they do for a real dependency.
func TestCoreUserGoSum(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v): cannot build a user module to count its go.sum", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/coreuser\n\ngo " + goDirective(t, filepath.Join(root, "go.mod")) + "\n\n" +
		"require " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n"
	main := "package main\n\nimport (\n" +
		"\t_ \"" + module + "/model/openai\"\n" +
		"\t_ \"" + module + "/pipeline\"\n" +
		"\t_ \"" + module + "/tool\"\n)\n\nfunc main() {}\n"
	writeFile(t, filepath.Join(dir, "go.mod"), gomod)
	writeFile(t, filepath.Join(dir, "main.go"), main)

	// Offline first, from the module cache. A fresh machine's cache may
	// lack a module that only a dependency's tests import (openai-go's azure
	// package, from its realtime tests): then the module proxy fills it, as
	// it would for a user's own go mod tidy. The count is the same either way.
	if out, err := tidy(gobin, dir, "GOPROXY=off"); err != nil {
		if !strings.Contains(string(out), "module lookup disabled by GOPROXY=off") {
			t.Fatalf("go mod tidy in a user module (offline, from the module cache): %v\n%s", err, out)
		}
		if out, err := tidy(gobin, dir); err != nil {
			t.Fatalf("go mod tidy in a user module (the module cache lacked a module; through GOPROXY=%s): %v\n%s", os.Getenv("GOPROXY"), err, out)
		}
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mods := sourceHashed(string(sum))
	t.Logf("%d modules with source hashes: %s", len(mods), strings.Join(mods, " "))
	if len(mods) > coreSumLimit {
		t.Errorf("a user module importing pipeline, model/openai and tool has %d modules with source hashes in its go.sum, want at most %d (go mod why -m in such a module says why):\n%s",
			len(mods), coreSumLimit, strings.Join(mods, "\n"))
	}
}

// tidy runs go mod tidy in dir, outside any workspace, with env added.
func tidy(gobin, dir string, env ...string) ([]byte, error) {
	cmd := exec.Command(gobin, "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off")
	cmd.Env = append(cmd.Env, env...)
	return cmd.CombinedOutput()
}

// sourceHashed returns, sorted, the modules of go.sum lines that hash a
// module's source (not only its go.mod).
func sourceHashed(sum string) []string {
	var mods []string
	for line := range strings.Lines(sum) {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasSuffix(f[1], "/go.mod") {
			continue
		}
		if !slices.Contains(mods, f[0]) {
			mods = append(mods, f[0])
		}
	}
	slices.Sort(mods)
	return mods
}

// goDirective returns the go version a go.mod declares.
func goDirective(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no go directive", path)
	return ""
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
