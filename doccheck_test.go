package turnkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestExportedIdentifiersDocumented holds the house rule that every exported
// identifier of the library has a doc comment. It parses the library's
// packages (the root module's and riverrun's, not internal/, testdata/,
// examples/, bench/, package main or _test.go files) with go/ast and lists
// each identifier without one as file:line kind name.
//
// What counts as documented:
//   - a package: a package comment ("Package x ...") in one of its files;
//   - a func, and a method whose receiver's type is exported: its doc comment;
//   - a type: the comment above its spec, or above an ungrouped "type" line;
//   - a const or var: the comment above its spec, a comment at the end of
//     its line, or the comment above its group ("const (" ... ")"), which
//     covers every name in the group, as go doc shows it.
//
// Struct fields and interface methods are not checked.
func TestExportedIdentifiersDocumented(t *testing.T) {
	var missing []string
	for _, dir := range libraryDirs(t) {
		missing = append(missing, undocumented(t, dir)...)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Error(m)
	}
	if len(missing) > 0 {
		t.Logf("%d exported identifiers without a doc comment (see the rules in this test's doc)", len(missing))
	}
}

// libraryDirs returns the folders, relative to the repository's root, that
// hold the library's non-test Go files.
func libraryDirs(t *testing.T) []string {
	t.Helper()
	skip := map[string]bool{"internal": true, "testdata": true, "examples": true, "bench": true, "node_modules": true}
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (skip[name] || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != "." && path != "riverrun" {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own, not the library's
			}
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				dirs = append(dirs, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("found %d library packages: the walk is not looking at the library", len(dirs))
	}
	return dirs
}

// undocumented returns "file:line kind name" for each exported identifier of
// the package in dir that has no doc comment.
func undocumented(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse %s: %v", dir, err)
	}
	var out []string
	report := func(pos token.Pos, kind, name string) {
		p := fset.Position(pos)
		out = append(out, p.Filename+":"+strconv.Itoa(p.Line)+": "+kind+" "+name+" has no doc comment")
	}
	for _, pkg := range pkgs {
		if pkg.Name == "main" {
			continue
		}
		hasPkgDoc := false
		var first string
		for name, f := range pkg.Files {
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				hasPkgDoc = true
			}
			if first == "" || name < first {
				first = name
			}
		}
		if !hasPkgDoc {
			out = append(out, first+":1: package "+pkg.Name+" has no package comment")
		}
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || documented(d.Doc) {
						continue
					}
					if d.Recv == nil {
						report(d.Name.Pos(), "func", d.Name.Name)
						continue
					}
					recv := receiverType(d.Recv.List[0].Type)
					if ast.IsExported(recv) {
						report(d.Name.Pos(), "method", recv+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					grouped := d.Lparen.IsValid()
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() && !documented(s.Doc) && (grouped || !documented(d.Doc)) {
								report(s.Name.Pos(), "type", s.Name.Name)
							}
						case *ast.ValueSpec:
							if documented(s.Doc) || documented(s.Comment) || documented(d.Doc) {
								continue
							}
							for _, n := range s.Names {
								if n.IsExported() {
									report(n.Pos(), d.Tok.String(), n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// documented reports whether g holds comment text.
func documented(g *ast.CommentGroup) bool {
	return g != nil && strings.TrimSpace(g.Text()) != ""
}

// receiverType returns the name of a method receiver's base type: T for T,
// *T, T[K] and *T[K, V].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestUndocumentedFindsEachKind checks the rules on a package with one of
// each case: what is reported, and what counts as documented.
func TestUndocumentedFindsEachKind(t *testing.T) {
	got := undocumented(t, filepath.Join("testdata", "doccheck"))
	sort.Strings(got)
	want := []string{
		"testdata/doccheck/p.go:4: func Bare has no doc comment",
		"testdata/doccheck/p.go:9: type T has no doc comment",
		"testdata/doccheck/p.go:14: method T.M has no doc comment",
		"testdata/doccheck/p.go:15: method G.N has no doc comment",
		"testdata/doccheck/p.go:29: const D has no doc comment",
		"testdata/doccheck/p.go:32: var E has no doc comment",
		"testdata/doccheck/p.go:37: type H has no doc comment",
	}
	for i := range want {
		want[i] = filepath.FromSlash(want[i])
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
