package turnkit_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docsWithCode are the documents whose Go code blocks must compile.
var docsWithCode = []string{"README.md", "docs/guide.md", "docs/features.md"}

// TestDocCodeCompiles holds the rule that every Go code block of the README
// and the guide compiles. The rule, one for every block:
//
// A block fenced with ```go is an excerpt of a Go file of this repository:
// its lines appear, in order and consecutively, in a .go file that .ci/run
// compiles (go vet and go test build every package of every module of
// go.work, tests included; testdata/ and node_modules/ do not count), in
// code rather than in a comment or a string. Each line may be indented more
// in the file than in the block, by the same amount for every line (a block
// copied out of a func body drops its tabs); nothing else may differ, so
// "…" in a block, or an edit made to one side only, fails. Write the code in
// an example program (examples/guide/...) or an Example func, and copy it
// into the document. Blocks fenced otherwise (```sh, ```text) are not Go.
//
// A block that fails is reported as document:line with its first line.
func TestDocCodeCompiles(t *testing.T) {
	files := compiledGoFiles(t)
	for _, doc := range docsWithCode {
		blocks, err := goBlocks(doc)
		if os.IsNotExist(err) {
			t.Errorf("%s: missing (its Go blocks are checked here)", doc)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if !b.foundIn(files) {
				t.Errorf("%s:%d: ```go block starting %q is not an excerpt of any compiled .go file (see TestDocCodeCompiles)", doc, b.line, firstLine(b.lines))
			}
		}
	}
}

// A codeBlock is a fenced Go block of a document.
type codeBlock struct {
	line  int      // of the opening fence, from 1
	lines []string // the block's lines, with the fence's indentation removed
}

// goBlocks returns the ```go blocks of the Markdown file at path.
func goBlocks(path string) ([]codeBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []codeBlock
		cur    *codeBlock
		inside bool // inside a fenced block of any language
		n      int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inside && strings.HasPrefix(trimmed, "```"):
			inside = true
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "go" {
				cur = &codeBlock{line: n}
			}
		case inside && trimmed == "```":
			inside = false
			if cur != nil {
				blocks = append(blocks, *cur)
				cur = nil
			}
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if inside {
		return nil, fmt.Errorf("%s: a code block is not closed", path)
	}
	return blocks, nil
}

// A goFile is a compiled Go file's lines and the byte ranges of its
// comments and string literals.
type goFile struct {
	path    string
	lines   []string
	offsets []int    // offset of each line's first byte
	skip    [][2]int // [start, end) of comments and string literals
}

// compiledGoFiles reads every .go file of the repository that the build
// sees: in a module of go.work, not under testdata/, node_modules/ or a
// folder starting with "." or "_", and with build constraints this
// platform satisfies.
func compiledGoFiles(t *testing.T) []*goFile {
	t.Helper()
	modules := workModules(t)
	var files []*goFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && !modules[filepath.ToSlash(path)] {
				return filepath.SkipDir // a module go.work leaves out: .ci/run does not build it
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		if ok, err := build.Default.MatchFile(filepath.Dir(path), name); err != nil || !ok {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		g := &goFile{path: path}
		off := 0
		for _, l := range strings.Split(string(src), "\n") {
			g.lines = append(g.lines, l)
			g.offsets = append(g.offsets, off)
			off += len(l) + 1
		}
		base := fset.File(f.Pos()).Base()
		for _, c := range f.Comments {
			g.skip = append(g.skip, [2]int{int(c.Pos()) - base, int(c.End()) - base})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				g.skip = append(g.skip, [2]int{int(lit.Pos()) - base, int(lit.End()) - base})
			}
			return true
		})
		files = append(files, g)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// workModules returns the folders go.work uses, relative to the root and
// cleaned ("." for the root module).
func workModules(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]bool{}
	inUse := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			mods[filepath.ToSlash(filepath.Clean(line))] = true
		case strings.HasPrefix(line, "use "):
			mods[filepath.ToSlash(filepath.Clean(strings.TrimSpace(strings.TrimPrefix(line, "use "))))] = true
		}
	}
	if !mods["."] {
		t.Fatalf("go.work does not use the root module: read %d modules", len(mods))
	}
	return mods
}

// foundIn reports whether b is an excerpt of one of files.
func (b codeBlock) foundIn(files []*goFile) bool {
	lines := trimTrailingBlank(b.lines)
	if len(lines) == 0 {
		return false
	}
	for _, f := range files {
		for i := range f.lines {
			if f.excerptAt(i, lines) {
				return true
			}
		}
	}
	return false
}

// excerptAt reports whether lines appear in f from line i on, each indented
// by the same extra prefix, starting in code.
func (f *goFile) excerptAt(i int, lines []string) bool {
	if i+len(lines) > len(f.lines) {
		return false
	}
	first := f.lines[i]
	if !strings.HasSuffix(first, lines[0]) || strings.TrimSpace(lines[0]) == "" {
		return false
	}
	extra := first[:len(first)-len(lines[0])]
	if strings.Trim(extra, " \t") != "" {
		return false
	}
	for j, l := range lines {
		got := f.lines[i+j]
		if l == "" {
			if strings.TrimSpace(got) != "" {
				return false
			}
			continue
		}
		if got != extra+l {
			return false
		}
	}
	// Some line of the excerpt must start in code, not in a comment or a
	// string: an excerpt of a doc comment's example compiles nowhere.
	for j, l := range lines {
		if strings.TrimSpace(l) != "" && f.inCode(f.offsets[i+j]+len(extra)+len(l)-len(strings.TrimLeft(l, " \t"))) {
			return true
		}
	}
	return false
}

// inCode reports whether the byte at off is outside f's comments and
// string literals.
func (f *goFile) inCode(off int) bool {
	for _, r := range f.skip {
		if off >= r[0] && off < r[1] {
			return false
		}
	}
	return true
}

func trimTrailingBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func firstLine(lines []string) string {
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" {
			return s
		}
	}
	return ""
}
