package rowcodec

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// A Migration is one embedded schema file, NNNN_name.sql, applied once in
// version order and recorded in a schema_version table.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the files migrations/*.sql of fsys in version order,
// each SQL text passed through expand. Versions must count up from 1
// without gaps.
func Migrations(pkg string, fsys fs.FS, expand func(string) string) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	for i, name := range names { // fs.Glob sorts
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("%s: migration %s: want a name starting %04d_", pkg, base, i+1)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: base, SQL: expand(string(b))})
	}
	return out, nil
}
