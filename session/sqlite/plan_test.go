package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// planData fills a store with a realistic history: one long run of calls
// and outputs, a second run after it, many small sessions around, and a
// checkpoint with items; it returns the key of the long run.
func planData(t *testing.T, s *Store) planKey {
	t.Helper()
	ctx := t.Context()
	const long = 3000 // items of the long run
	items := make([]state.Item, 0, long)
	for i := 0; len(items) < long; i++ {
		id := "call_" + strconv.Itoa(i)
		items = append(items,
			state.ToolCall("fc_"+strconv.Itoa(i), id, "echo", `{}`).WithSeq(int64(len(items)+1)),
			state.ToolOutput(id, "echo", "ok").WithSeq(int64(len(items)+2)))
	}
	if err := s.Append(ctx, "plan", "long", items); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "plan", "next", items[:10]); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := s.Append(ctx, "other-"+strconv.Itoa(i), "run", items[:20]); err != nil {
			t.Fatal(err)
		}
	}
	run := state.NewRun("long", "agent")
	if err := runcore.SetHistory(run, items[:200]); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, run); err != nil {
		t.Fatal(err)
	}
	// The rows that follow are written as saves write them, in one
	// transaction rather than one each: the same rows, in a fraction of
	// the time.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// Checkpoint items of many runs.
	for r := range 100 {
		for seq := range 40 {
			if _, err := tx.ExecContext(ctx, piecesSQL[1], "run-"+strconv.Itoa(r), 1, seq+1, []byte(`{"type":"message"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The listing's rows of many runs, in many sessions and every status.
	for r := range 3000 {
		sid := "other-" + strconv.Itoa(r%200)
		if r%100 == 0 {
			sid = "plan"
		}
		run := "listed-" + strconv.Itoa(r)
		// The head's insert files the run in run_index (its trigger).
		if _, err := tx.ExecContext(ctx, sqlCkptInsertHead, run, 1, []byte(`{}`), "agent", 1, r%3%2, sid, r%3+1); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return planKey{session: "plan", run: "long", place: 1, seq: long, callID: "call_77", listBefore: 2000}
}

// planFile is the database file of planData, built once per test binary
// (by the first test that asks for it) and copied for each test, which
// may change its copy (ANALYZE, a dropped index): building the data is
// most of these tests' time, under -race minutes.
var planFile struct {
	once sync.Once
	data []byte  // the file's bytes, its log checkpointed into it
	key  planKey // planData's key of the long run
}

// planStore opens a store on a copy of planData's file in the test's
// temporary directory and returns it with the key of the long run.
func planStore(t *testing.T) (*Store, planKey) {
	t.Helper()
	planFile.once.Do(func() {
		path := filepath.Join(t.TempDir(), "plans.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		k := planData(t, s)
		var busy, logged, done int
		if err := s.db.QueryRowContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
			t.Fatalf("wal_checkpoint(TRUNCATE) = busy %d, %v", busy, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		planFile.data, planFile.key = data, k
	})
	if planFile.data == nil {
		t.Fatal("the plan tests' data was not built: see the first failure")
	}
	path := filepath.Join(t.TempDir(), "plans.db")
	if err := os.WriteFile(path, planFile.data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, planFile.key
}

// planText returns the EXPLAIN QUERY PLAN of q with args, one line per
// node, indented by two spaces per level.
func planText(ctx context.Context, db *sql.DB, q string, args []any) ([]string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	depth := map[int]int{0: -1}
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		depth[id] = depth[parent] + 1
		out = append(out, strings.Repeat("  ", depth[id])+detail)
	}
	return out, rows.Err()
}

// growing matches the plan lines whose cost grows with the table: a scan
// of a table (not of a subquery's rows) and a sort of a table's rows.
var growing = regexp.MustCompile(`^\s*(SCAN [a-z_]+( |$)|USE TEMP B-TREE FOR (GROUP BY|DISTINCT))`)

// TestStatementPlans reads the plan of every statement of the store, on a
// table of thousands of rows, before and after ANALYZE (what PRAGMA
// optimize or an operator may run), and fails unless it is the plan the
// statement was written for: index lookups whose cost does not grow with
// the history (see statements.go). The plans are exact, so a statement
// whose plan changes, for the better too, says so here first.
func TestStatementPlans(t *testing.T) {
	s, k := planStore(t)
	for _, stats := range []string{"no statistics", "after ANALYZE"} {
		if stats == "after ANALYZE" {
			if _, err := s.db.ExecContext(t.Context(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, st := range statements {
			got, err := planText(t.Context(), s.db, st.sql, st.args(k))
			if err != nil {
				t.Errorf("%s, %s: EXPLAIN QUERY PLAN: %v", st.name, stats, err)
				continue
			}
			// A co-routine's rows are its subquery's (here, an insert's
			// VALUES), whose own plan is above it: scanning them scans no
			// table.
			coroutines := map[string]bool{}
			for _, line := range got {
				if name, ok := strings.CutPrefix(strings.TrimSpace(line), "CO-ROUTINE "); ok {
					coroutines[name] = true
				}
			}
			// A recursive step's first scan is of the rows the step before
			// it made (one row a step here), not of a table.
			for i, line := range got {
				if i > 0 && strings.TrimSpace(got[i-1]) == "RECURSIVE STEP" {
					coroutines[strings.TrimPrefix(strings.TrimSpace(line), "SCAN ")] = true
				}
			}
			for _, line := range got {
				if growing.MatchString(line) && !coroutines[strings.TrimPrefix(strings.TrimSpace(line), "SCAN ")] {
					t.Errorf("%s, %s: plan line %q grows with the table", st.name, stats, strings.TrimSpace(line))
				}
			}
			if !slices.Equal(got, st.plan) {
				t.Errorf("%s, %s: plan\n\t%s\nwant\n\t%s", st.name, stats, strings.Join(got, "\n\t"), strings.Join(st.plan, "\n\t"))
			}
		}
	}
}

// oldInsertRow is the row of the append's insert before it named its
// index and guarded the lookup with the item's kind.
const oldInsertRow = `(?, ?, ?, ?, ?, ?, ?, ?, max(?, COALESCE((SELECT c.seq FROM session_items c
	WHERE c.session_id = ? AND c.place = ? AND c.call_id = ? AND c.answers IS NULL AND c.seq < ?
	ORDER BY c.seq DESC LIMIT 1), 0)), NULL)` // NULL: the behind column, which came later

// TestGrowingPlanIsCaught checks the plan test's eye on the defect it was
// written for: the append's call lookup as it was, on the index of calls
// it had then (migration 0002's, which left outputs out), searched the
// primary key by a prefix of the run, walking the run backwards from the
// item, which TestStatementPlans would have refused. (On the index of
// calls and outputs, migration 0008's, SQLite picks the index by itself.)
func TestGrowingPlanIsCaught(t *testing.T) {
	s, k := planStore(t)
	for _, q := range []string{
		`DROP INDEX session_items_call_ids`,
		`CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
			WHERE call_id IS NOT NULL AND answers IS NULL`,
	} {
		if _, err := s.db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	old := sqlInsertItems + oldInsertRow + sqlInsertTail
	args := []any{k.session, k.place, k.seq + 1, "tool_output", "echo", []byte(`{}`), k.callID, int64(1 << 40),
		int64(0), k.session, k.place, k.callID, k.seq + 1}
	got, err := planText(t.Context(), s.db, old, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan of the old insert:\n\t%s", strings.Join(got, "\n\t"))
	want := []string{"SCALAR SUBQUERY 1", "  SEARCH c USING PRIMARY KEY (session_id=? AND place=? AND seq<?)"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan of the old insert = %q, want %q", got, want)
	}
	for _, st := range statements {
		if st.name == "insert items" && slices.Equal(got, st.plan) {
			t.Fatal("the old insert's plan is the one the insert was written for")
		}
	}
}

// sqlKeyword finds SQL in a string literal.
var sqlKeyword = regexp.MustCompile(`\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b`)

// TestEveryStatementIsListed fails if a statement is written outside
// statements.go (but for the migrations), or if a statement of
// statements.go is missing from statements, the list the plan test reads.
func TestEveryStatementIsListed(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, st := range statements {
		listed[st.sql] = true
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "migrate.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0) // with objects: stringConst resolves the constants a statement is built of
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if name == "statements.go" {
				// Every constant named sql… is a statement, or a piece of
				// the insert, which insertItemsSQL assembles.
				vs, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "sql") || strings.HasPrefix(id.Name, "sqlInsert") {
						continue
					}
					v, ok := stringConst(f, vs.Values[i])
					if !ok {
						continue
					}
					if !listed[v] {
						t.Errorf("%s: %s is not in statements, so its plan is not tested", fset.Position(id.Pos()), id.Name)
					}
				}
				return true
			}
			lit, ok := n.(*ast.BasicLit)
			if ok && lit.Kind == token.STRING && sqlKeyword.MatchString(lit.Value) {
				t.Errorf("%s: a statement outside statements.go: %s", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if !listed[insertItemsSQL(1)] {
		t.Error("the insert of items is not in statements")
	}
	if !listed[joinSQL[1]] || !listed[joinSQL[3]] {
		t.Error("the one-statement append is not in statements")
	}
}

// stringConst returns the value of e, a string constant of file f: a
// literal, a constant of f, or a concatenation of them.
func stringConst(f *ast.File, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.Unquote(e.Value)
		return v, err == nil && e.Kind == token.STRING
	case *ast.ParenExpr:
		return stringConst(f, e.X)
	case *ast.BinaryExpr:
		x, okx := stringConst(f, e.X)
		y, oky := stringConst(f, e.Y)
		return x + y, okx && oky && e.Op == token.ADD
	case *ast.Ident:
		obj := f.Scope.Lookup(e.Name)
		if obj == nil || obj.Kind != ast.Con {
			return "", false
		}
		vs, ok := obj.Decl.(*ast.ValueSpec)
		if !ok {
			return "", false
		}
		for i, id := range vs.Names {
			if id.Name == e.Name && i < len(vs.Values) {
				return stringConst(f, vs.Values[i])
			}
		}
	}
	return "", false
}

// triggerPlans is the plan each trigger of the schema was written for:
// migration 0013's keep the listing's row (run_index) in step with the
// head's, on every first save of a run and on every save that changes its
// session or status. Both are an upsert of one row of VALUES, whose
// conflict is found by run_index's key (SQLite refuses an ON CONFLICT
// target no unique index serves): a plan of no lines. A trigger missing
// here fails TestTriggerPlans.
var triggerPlans = map[string][]string{
	"run_checkpoints_filed":   {},
	"run_checkpoints_refiled": {},
}

// triggerRef is a trigger's reference to a column of the row that fired
// it, which triggerPlans binds as a parameter.
var triggerRef = regexp.MustCompile(`\b(new|old)\.([a-z_]+)\b`)

// triggerRow holds the values triggerPlans binds for a trigger's
// references to the row that fired it, by column.
var triggerRow = map[string]any{"run_id": "listed-7", "session_id": "plan", "status": 1}

// triggerPlan returns the plan of each statement of the trigger defined
// by def (CREATE TRIGGER … BEGIN … END), its references to the row
// bound from triggerRow. EXPLAIN QUERY PLAN of the statement that fires a
// trigger leaves the trigger's statements out, so they are read here.
func triggerPlan(ctx context.Context, db *sql.DB, def string) ([][]string, error) {
	begin, end := strings.Index(def, "BEGIN"), strings.LastIndex(def, "END")
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no BEGIN … END in %q", def)
	}
	var plans [][]string
	for _, stmt := range strings.Split(def[begin+len("BEGIN"):end], ";") {
		if stmt = strings.TrimSpace(stmt); stmt == "" {
			continue
		}
		var args []any
		var missing []string
		q := triggerRef.ReplaceAllStringFunc(stmt, func(ref string) string {
			col := triggerRef.FindStringSubmatch(ref)[2]
			v, ok := triggerRow[col]
			if !ok {
				missing = append(missing, col)
			}
			args = append(args, v)
			return "?"
		})
		if missing != nil {
			return nil, fmt.Errorf("no test value for columns %v of %q", missing, stmt)
		}
		plan, err := planText(ctx, db, q, args)
		if err != nil {
			return nil, fmt.Errorf("EXPLAIN QUERY PLAN of %q: %w", q, err)
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// TestTriggerPlans reads the plan of every statement a trigger of the
// schema runs, as TestStatementPlans reads the store's own, on the plan
// data before and after ANALYZE.
func TestTriggerPlans(t *testing.T) {
	s, _ := planStore(t)
	for _, stats := range []string{"no statistics", "after ANALYZE"} {
		if stats == "after ANALYZE" {
			if _, err := s.db.ExecContext(t.Context(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := s.db.QueryContext(t.Context(), `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defs := map[string]string{}
		for rows.Next() {
			var name, def string
			if err := rows.Scan(&name, &def); err != nil {
				t.Fatal(err)
			}
			defs[name] = def
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		for name := range triggerPlans {
			if _, ok := defs[name]; !ok {
				t.Errorf("trigger %s is in triggerPlans but not in the schema", name)
			}
		}
		for name, def := range defs {
			want, ok := triggerPlans[name]
			if !ok {
				t.Errorf("trigger %s has no plan in triggerPlans", name)
				continue
			}
			plans, err := triggerPlan(t.Context(), s.db, def)
			if err != nil {
				t.Errorf("trigger %s, %s: %v", name, stats, err)
				continue
			}
			for _, got := range plans {
				for _, line := range got {
					if growing.MatchString(line) {
						t.Errorf("trigger %s, %s: plan line %q grows with the table", name, stats, strings.TrimSpace(line))
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("trigger %s, %s: plan\n\t%s\nwant\n\t%s", name, stats, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
				}
			}
		}
	}
}

// TestTriggerPlanIsRead checks TestTriggerPlans's eye: a trigger whose
// statement finds the listing's rows by an expression no index serves
// has a plan that scans the table, which the plan test refuses.
func TestTriggerPlanIsRead(t *testing.T) {
	s, _ := planStore(t)
	const def = `CREATE TRIGGER scans AFTER UPDATE ON run_checkpoints BEGIN
	DELETE FROM run_index WHERE status + 0 = new.status;
END`
	plans, err := triggerPlan(t.Context(), s.db, def)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || len(plans[0]) != 1 || !growing.MatchString(plans[0][0]) {
		t.Fatalf("plan of a scanning trigger = %q, want one line that grows with the table", plans)
	}
}
