package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/state"
)

// A planKey names the rows a plan test binds a statement to.
type planKey struct {
	session, run string
	place, seq   int64
	callID       string
	// The statement's variant, for those of a placedStatements (see
	// statementsOf), and its number of rows.
	variant string
	rows    int
}

// A planCase is one statement of the store with the arguments its plan
// test binds and the scans it was written for: each "relation index" its
// plan may read, as planScans lists them (a plan may leave out a scan, as
// a custom plan prunes a CTE its arguments turn off). Only index scans are
// allowed: a Seq Scan reads the whole table ("relation -"), and a bitmap
// scan reads every row its index condition selects before a limit or an
// order can apply, so it is allowed (bitmap) only in a statement that
// returns or removes all those rows anyway.
type planCase struct {
	args   func(k planKey) []any
	scans  []string
	bitmap bool
}

// planCases are the plan tests of the store's statements, by the field of
// queries or ckptQueries that holds the statement: TestStatementPlans
// fails on a field without one, so a statement cannot be added without its
// plan test.
var planCases = map[string]planCase{
	"appendOne": {
		args: func(k planKey) []any { return appendArgs(k, k.run) },
		scans: []string{
			"session_runs session_runs_pkey",
			"session_items session_items_pkey",  // the positions appended to, one entry each
			"session_items session_items_calls", // LIMIT 1, in the index's order, for outputs only
		}},
	"appendExisting": {
		args: func(k planKey) []any { return appendArgs(k, k.run) },
		scans: []string{
			"session_runs session_runs_pkey",
			"session_heads session_heads_pkey",  // the write stamps, by key
			"session_items session_items_calls", // LIMIT 1, in the index's order, for outputs only
		}},
	"changesSince": {
		args:   func(k planKey) []any { return []any{k.session, k.run, int64(1 << 40)} },
		bitmap: true, // returns every row its index condition selects
		scans:  []string{"session_heads session_heads_pkey", "session_runs session_runs_pkey", "session_items session_items_stamps"}},
	"changesTail": {
		args:  func(k planKey) []any { return []any{k.session, k.run, int64(20)} },
		scans: []string{"session_heads session_heads_pkey", "session_runs session_runs_pkey", "session_items session_items_pkey"}},
	"bumpGen": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: []string{"session_heads session_heads_pkey"}},
	"runPlace": {
		args:  func(k planKey) []any { return []any{k.session, k.run} },
		scans: []string{"session_runs session_runs_pkey"}},
	"newRun": {
		args:  func(k planKey) []any { return []any{k.session, k.run + "-new"} },
		scans: nil}, // upserts by key
	"takeStamp": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: []string{"session_heads session_heads_pkey"}},
	"insertItems": {
		args:  func(k planKey) []any { return append(appendArgs(k, k.place), int64(1<<40)) },
		scans: []string{"session_items session_items_calls"}},
	"storedItems": {
		args:   func(k planKey) []any { return []any{k.session, k.place, []int64{k.seq - 1, k.seq}} },
		bitmap: true,
		scans:  []string{"session_items session_items_pkey"}},
	"lockSession": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: nil},
	"lockShared": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: nil},
	"placed": { // a commit of the long run past its first append, after lockShared
		args: func(k planKey) []any { return placedArgs(k) },
		scans: []string{ // no read of the positions appended to: their key checks them
			"session_runs session_runs_pkey",
			"session_heads session_heads_pkey",  // the head's row, by key: its write stamp
			"session_items session_items_calls", // LIMIT 1, in the index's order, for outputs only (not paired)
		}},
	"list": {
		args:  func(k planKey) []any { return []any{k.session, int64(20)} },
		scans: []string{"session_items session_items_pkey"}}, // LIMIT, backwards in the key's order
	"listBefore": { // the history of the run after the long one
		args:  func(k planKey) []any { return []any{k.session, "next", int64(20), int64(1 << 40)} },
		scans: []string{"session_heads session_heads_pkey", "session_items session_items_pkey", "session_runs session_runs_pkey"}},
	"lookup": {
		args:  func(k planKey) []any { return []any{k.session, k.run, k.seq} },
		scans: []string{"session_runs session_runs_pkey", "session_items session_items_pkey"}},
	"pop": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: []string{"session_items session_items_pkey", "session_items session_items_pkey"}},
	"hasItems": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: []string{"session_items session_items_pkey"}},
	"clearHead": {
		args:   func(k planKey) []any { return []any{k.session} },
		bitmap: true,
		scans:  []string{"session_heads session_heads_pkey"}},
	"clearRuns": {
		args:   func(k planKey) []any { return []any{k.session} },
		bitmap: true,
		scans:  []string{"session_runs session_runs_pkey"}}, // deletes what it reads
	"clearItems": {
		args:   func(k planKey) []any { return []any{k.session} },
		bitmap: true,
		// deletes what it reads, by either index that leads with the session
		scans: []string{"session_items session_items_pkey", "session_items session_items_stamps"}},
	"clearIndex": {
		args:  func(k planKey) []any { return []any{k.session} },
		scans: []string{"session_index session_index_pkey"}},
	"listSessions": {
		args:  func(k planKey) []any { return []any{int64(500), int64(21)} },
		scans: []string{"session_index session_index_serial_key"}}, // LIMIT, backwards in the index's order
	"searchSessions": {
		args:  func(k planKey) []any { return []any{"other-1", "other-1", "other-1\U0010FFFF", int64(21)} },
		scans: []string{"session_index session_index_pkey"}}, // LIMIT, in the key's order
	"page": {
		args:  func(k planKey) []any { return []any{k.session, k.place, k.seq - 100, int64(51)} },
		scans: []string{"session_items session_items_pkey", "session_runs session_runs_place"}},
	"ck.load": {
		args:   func(k planKey) []any { return []any{k.run} },
		bitmap: true,
		scans:  []string{"run_checkpoints run_checkpoints_pkey", "run_checkpoint_items run_checkpoint_items_pkey"}},
	"ck.save": {
		args: func(k planKey) []any {
			return []any{k.run, int64(1), int64(2), []byte(`{}`), []byte(nil), false, false, []int64{k.seq}, [][]byte{[]byte(`{}`)},
				k.session, int16(1), "agent", int64(1), int64(1)}
		},
		bitmap: true,
		scans: []string{"run_checkpoints run_checkpoints_pkey", "run_checkpoint_items run_checkpoint_items_pkey",
			"run_index run_index_pkey"}},
	"ck.listAll": {
		args:  func(k planKey) []any { return []any{int64(2000), int64(21)} },
		scans: []string{"run_index run_index_all", "run_checkpoints run_checkpoints_pkey"}}, // LIMIT, in the index's order; each head by key
	"ck.listStatus": {
		args:  func(k planKey) []any { return []any{int64(2000), int64(21), int16(1)} },
		scans: []string{"run_index run_index_status", "run_checkpoints run_checkpoints_pkey"}},
	"ck.listSession": {
		args:  func(k planKey) []any { return []any{int64(2000), int64(21), k.session} },
		scans: []string{"run_index run_index_session", "run_checkpoints run_checkpoints_pkey"}},
	"ck.listSessionStatus": {
		args:  func(k planKey) []any { return []any{int64(2000), int64(21), int16(1), k.session} },
		scans: []string{"run_index run_index_session_status", "run_checkpoints run_checkpoints_pkey"}},
	"ck.saveAppend": { // a tool turn's commit at the end of the long run, with its save
		args: func(k planKey) []any {
			return append(appendArgs(k, k.run),
				int64(1), int64(2), []byte(`{}`), []byte(nil), false, false, []int64{k.seq + 1, k.seq + 2}, [][]byte{[]byte(`{}`), []byte(`{}`)},
				k.session, int16(1), "agent", int64(1), int64(1))
		},
		bitmap: true, // the removal of a full save's items: every row it reads goes
		scans: []string{
			"session_runs session_runs_pkey",
			"session_items session_items_pkey",  // the positions appended to, one entry each
			"session_items session_items_calls", // LIMIT 1, in the index's order, for outputs only
			"run_checkpoints run_checkpoints_pkey",
			"run_checkpoint_items run_checkpoint_items_pkey",
			"run_index run_index_pkey",
		}},
	"ck.casOn": {
		args:  func(k planKey) []any { return casArgs(k) },
		scans: []string{"run_checkpoints run_checkpoints_pkey"}},
	"ck.casPiecesOn": {
		args:  func(k planKey) []any { return piecesArgs(k, casArgs(k)) },
		scans: []string{"run_checkpoints run_checkpoints_pkey"}},
	"ck.commitOn": { // a tool turn's commit at the end of the long run (variant "s/paired/pieces/items")
		args: func(k planKey) []any { return commitArgs(k) },
		scans: []string{ // no read of the positions appended to: their key checks them
			"run_checkpoints run_checkpoints_pkey",
			"session_heads session_heads_pkey",  // the generation read, then the head's row by key: its write stamp
			"session_runs session_runs_pkey",    // the run's place
			"session_items session_items_calls", // LIMIT 1, in the index's order, for outputs only (not paired)
		}},
	"ck.version": {
		args:  func(k planKey) []any { return []any{k.run} },
		scans: []string{"run_checkpoints run_checkpoints_pkey"}},
	"ck.delete": {
		args:   func(k planKey) []any { return []any{k.run} },
		bitmap: true,
		scans: []string{"run_checkpoint_items run_checkpoint_items_pkey", "run_checkpoints run_checkpoints_pkey",
			"run_index run_index_pkey"}},
}

// piecesArgs appends to args the pieces of the statement of a
// piecesStatements k names: two as arrays ("arrays"), or k.rows rows of a
// position and its JSON ("rows/…").
func piecesArgs(k planKey, args []any) []any {
	return appendPieces(args, k.seq, k.rows)
}

// appendPieces appends to args pieces after position seq: rows rows of a
// position and its JSON, or two as arrays if rows is 0.
func appendPieces(args []any, seq int64, rows int) []any {
	if rows == 0 {
		return append(args, []int64{seq + 1, seq + 2}, [][]byte{[]byte(`{}`), []byte(`{}`)})
	}
	for i := range rows {
		args = append(args, seq+1+int64(i), []byte(`{}`))
	}
	return args
}

// commitArgs are the arguments of the statement of ckptQueries.commitOn
// that k names ("s/paired/pieces/items", see commitStatements): casArgs,
// the pieces, the session, and the items of placedArgs.
func commitArgs(k planKey) []any {
	var paired, pieces, items int
	if _, err := fmt.Sscanf(k.variant, "s/%d/%d/%d", &paired, &pieces, &items); err != nil {
		panic("commitOn variant " + k.variant + ": " + err.Error())
	}
	args := casArgs(k)
	if pieces > 0 {
		rows := pieces
		if pieces == maxValuesRows+1 {
			rows = 0 // arrays
		}
		args = appendPieces(args, k.seq, rows)
	}
	args = append(args, k.session)
	k.rows = items + 1
	if items == maxValuesRows {
		k.rows = 0 // arrays
	}
	return append(args, placedArgs(k)[2:]...)
}

// casArgs are the arguments of ckptQueries.casOn, the first ones of the
// other compare-and-swaps.
func casArgs(k planKey) []any {
	return []any{k.run, int64(1), int64(2), []byte(`{}`), []byte(nil), false, "agent", int64(1), int64(1)}
}

// appendArgs are the arguments of an append of a call with a new ID and
// an output of an earlier call, at the end of the long run.
func appendArgs(k planKey, placeOrRun any) []any {
	zero := int64(0)
	return []any{k.session, placeOrRun,
		[]int64{k.seq + 1, k.seq + 2},
		[]string{"tool_call", "tool_output"},
		[]string{"echo", "echo"},
		[][]byte{[]byte(`{}`), []byte(`{}`)},
		[][]byte{[]byte("call_new"), []byte(k.callID)},
		[]*int64{nil, &zero}}
}

// placedArgs are the arguments of the placed append k names (planKey.variant):
// a call with a new ID and an output of an earlier call at the end of the
// long run, as arrays ("arrays/…") or as k.rows rows of a VALUES list
// ("rows/…": the output last, the calls before it).
func placedArgs(k planKey) []any {
	if k.rows == 0 {
		return appendArgs(k, k.run)
	}
	zero := int64(0)
	args := []any{k.session, k.run}
	for i := range k.rows - 1 {
		args = append(args, k.seq+1+int64(i), "tool_call", "echo", []byte(`{}`), []byte("call_new_"+strconv.Itoa(i)), (*int64)(nil))
	}
	return append(args, k.seq+int64(k.rows), "tool_output", "echo", []byte(`{}`), []byte(k.callID), &zero)
}

// statementsOf returns the statements of q and ck by field name
// (ckptQueries' prefixed with "ck."); a field that holds statements in an
// array or a struct (placedStatements, piecesStatements) gives one for
// each, by the field's name, then each index or field under it after a
// "/": "placed/rows/1/2" is queries.placed.rows[1][2].
func statementsOf(q queries, ck ckptQueries) map[string]string {
	out := map[string]string{}
	var walk func(name string, v reflect.Value)
	walk = func(name string, v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out[name] = v.String()
		case reflect.Array:
			for i := range v.Len() {
				walk(name+"/"+strconv.Itoa(i), v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(name+"/"+v.Type().Field(i).Name, v.Field(i))
			}
		}
	}
	for prefix, v := range map[string]reflect.Value{"": reflect.ValueOf(q), "ck.": reflect.ValueOf(ck)} {
		for i := range v.NumField() {
			walk(prefix+v.Type().Field(i).Name, v.Field(i))
		}
	}
	return out
}

// planData fills the store's schema with a realistic history: one long
// run of calls and outputs, a second run after it, many small sessions
// around it, and checkpoint items of many runs; then ANALYZE.
func planData(t *testing.T, s *Store, schema string) planKey {
	t.Helper()
	ctx := t.Context()
	const long = 3000
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
	for i := range 1000 {
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
	for r := range 500 {
		run := state.NewRun("run-"+strconv.Itoa(r), "agent")
		if err := s.Save(ctx, run); err != nil {
			t.Fatal(err)
		}
		seqs := make([]int64, 40)
		data := make([][]byte, 40)
		for i := range seqs {
			seqs[i], data[i] = int64(i+1), []byte(`{"type":"message"}`)
		}
		if _, err := s.pool.Exec(ctx, s.ck.save, run.ID(), run.Version(), run.Version()+1, []byte(`{}`), []byte(nil), false, false, seqs, data,
			"", int16(2), "agent", int64(1), int64(0)); err != nil {
			t.Fatal(err)
		}
	}
	// The listing's rows of many runs in every status: a long
	// conversation of a run per message (every other run), and many
	// small sessions.
	sch := pgx.Identifier{schema}.Sanitize()
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+sch+`.run_index (run_id, session_id, status)
		SELECT 'listed-' || i, CASE WHEN i % 2 = 0 THEN 'plan' ELSE 'other-' || (i % 500) END, i % 3 + 1
		FROM generate_series(1, 5000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+sch+`.run_checkpoints (run_id, version, data, agent, turn, pending)
		SELECT 'listed-' || i, 1, '{}', 'agent', 1, i % 3 % 2
		FROM generate_series(1, 5000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	return planKey{session: "plan", run: "long", place: 1, seq: long, callID: "call_77"}
}

// explain returns the plan of q with args as EXPLAIN (FORMAT JSON)
// EXECUTE gives it under the plan cache mode mode (force_custom_plan or
// force_generic_plan), without running q.
func explain(ctx context.Context, pool *pgxpool.Pool, q, mode string, args []any) (any, error) {
	var plan any
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "PREPARE tkplan AS "+q); err != nil {
			return err
		}
		defer tx.Exec(ctx, "DEALLOCATE tkplan") //nolint:errcheck // the rollback drops it too
		ph := make([]string, len(args))
		for i := range args {
			ph[i] = "$" + strconv.Itoa(i+1)
		}
		var raw []byte
		qargs := append([]any{pgx.QueryExecModeSimpleProtocol}, args...)
		if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE tkplan("+strings.Join(ph, ", ")+")", qargs...).Scan(&raw); err != nil {
			return err
		}
		return json.Unmarshal(raw, &plan)
	})
	return plan, err
}

// planScans walks a JSON plan and returns its table scans as "relation
// index" ("relation -" for a scan with no index), in plan order, and
// whether it holds a bitmap scan.
func planScans(plan any) (scans []string, bitmap bool) {
	var walk func(n any)
	walk = func(n any) {
		switch n := n.(type) {
		case []any:
			for _, x := range n {
				walk(x)
			}
		case map[string]any:
			if p, ok := n["Plan"]; ok {
				walk(p)
				return
			}
			typ, _ := n["Node Type"].(string)
			rel, isScan := n["Relation Name"].(string)
			switch {
			case typ == "Bitmap Heap Scan":
				bitmap = true
				scans = append(scans, rel+" "+bitmapIndex(n))
			case isScan && (typ == "Index Scan" || typ == "Index Only Scan"):
				scans = append(scans, rel+" "+n["Index Name"].(string))
			case isScan && typ != "ModifyTable":
				scans = append(scans, rel+" -") // a Seq Scan, and anything else
			}
			walk(n["Plans"])
		}
	}
	walk(plan)
	return scans, bitmap
}

// bitmapIndex returns the index a bitmap heap scan's bitmap comes from.
func bitmapIndex(n map[string]any) string {
	for _, c := range n["Plans"].([]any) {
		if c := c.(map[string]any); c["Node Type"] == "Bitmap Index Scan" {
			return c["Index Name"].(string)
		}
	}
	return "-"
}

// TestStatementPlans reads the plan of every statement of the store
// (every field of queries and ckptQueries) on tables of thousands of rows
// after ANALYZE, as a custom plan for the arguments of the test's longest
// run and as the generic plan the appends run with, and fails unless each
// table is read by the index the statement was written for, never by a
// Seq Scan or a bitmap scan: then no statement's cost grows with the
// history. The tables are realistic rather than tiny with enable_seqscan
// off: what is tested is the planner's own choice on data shaped like a
// long conversation among many.
func TestStatementPlans(t *testing.T) {
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "turnkit_plans_" + hex.EncodeToString(b)
	defer pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	s, err := New(t.Context(), pool, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	k := planData(t, s, schema)
	stmts := statementsOf(s.q, s.ck)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range stmts {
			if !yield(n) {
				return
			}
		}
	}) {
		field, variant, _ := strings.Cut(name, "/")
		c, ok := planCases[field]
		if !ok {
			t.Errorf("%s: no plan case: add one to planCases", name)
			continue
		}
		k := k
		k.variant = variant
		if strings.HasPrefix(variant, "rows/") {
			// rows[…][n-1] holds the statement of n rows.
			i := strings.LastIndexByte(variant, '/')
			k.rows, _ = strconv.Atoi(variant[i+1:])
			k.rows++
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan, err := explain(t.Context(), pool, stmts[name], mode, c.args(k))
			if err != nil {
				t.Errorf("%s, %s: %v", name, mode, err)
				continue
			}
			scans, bitmap := planScans(plan)
			bad := bitmap && !c.bitmap
			for _, x := range scans {
				bad = bad || !slices.Contains(c.scans, x)
			}
			if bad {
				out, _ := json.MarshalIndent(plan, "\t", "  ")
				t.Errorf("%s, %s: scans %q (bitmap: %v), want scans among %q (bitmap allowed: %v); plan:\n\t%s",
					name, mode, scans, bitmap, c.scans, c.bitmap, out)
			}
		}
	}
	for name := range planCases {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(stmts)), func(s string) bool { f, _, _ := strings.Cut(s, "/"); return f == name }) {
			t.Errorf("plan case %s: no such statement", name)
		}
	}
}
