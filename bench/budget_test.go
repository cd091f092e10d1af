package bench_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// A budget is the most allocations one unit of a scenario (a turn, a
// cycle, an operation) may make, and why it is what it is. Allocation
// counts do not depend on the machine's speed or load, so unlike a time
// they can be checked in a test: a change that allocates more on a hot
// path fails here, and raises the budget in the same commit, with its
// reason beside the number.
type budget struct {
	scenario string
	allocs   float64
	why      string
}

// budgets are checked by TestAllocBudgets. Each is the count measured when
// it was set (2026-12-01), averaged over allocIterations and rounded up to
// a tenth; a scenario's count varies by less than 0.2 between runs (map
// growth and pools are amortized over the iterations), and one more
// allocation per unit adds 1, over the slack. The scenarios are
// bench/internal/scenario's, the same that BenchmarkTurn and the others
// time; the per-middleware rows are the Runner's turn with that one
// middleware.
var budgets = []budget{
	{"turn/runner/history=10", 9.6, "the Runner's turn: the model call, the response's items placed, the next step decided; 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"turn/runner+5mw/history=10", 9.6, "five pass-through middleware add their handler closures' calls, no allocation each; 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"middleware/tracing/history=10", 9.6, "spans with no provider: the attribute slices; 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"middleware/persistence+memory/history=10", 10.6, "the turn's items appended to the session; 19.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 15.8 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 14.8 before a call's output item was made once for persistence and the core, not twice (ToolCall.ResultItem remembers it); 13.8 before the turn's ledger carried the context the turn is served with (one allocation for both, not a context.WithValue of its own); 12.8 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 11.8 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn); 11.7 before session/memory kept a call ID's first position inline instead of in a slice of its own (one allocation per call appended)"},
	{"middleware/approval/history=10", 9.6, "nothing gated; 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"middleware/guardrails/history=10", 9.6, "an input and an output check; 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"middleware/logging/history=10", 9.6, "zap.NewNop: each stage reads the logger's level and passes the call on (it read the clock and built no fields before, allocating nothing either); 15.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 11.7 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 10.7 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 9.7 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn)"},
	{"middleware/chain/history=10", 10.6, "the default chain; 19.7 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 15.8 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 14.8 before a call's output item was made once for persistence and the core, not twice (ToolCall.ResultItem remembers it); 13.8 before the turn's ledger carried the context the turn is served with (one allocation for both, not a context.WithValue of its own); 12.8 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 11.8 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn); 11.7 before session/memory kept a call ID's first position inline instead of in a slice of its own (one allocation per call appended)"},
	{"approval/cycle", 86.4, "interrupt, marshal, unmarshal, approve, resume; 89.4 before a Result read its new items from the run instead of keeping a copy of each (the run's and the resume's slices grew by doubling: 3 allocations a cycle); 93.4 before Unmarshal read a pending approval's tool and agent as interned names, built a pending approval's check path only on failure and kept its options' config off the heap when given none; 98.4 before a run's pending approvals were copy-on-write, shared (capped at their length) by Run.Clone, a checkpoint's snapshot and a result's interruptions, and Clone shared the input, items, context and model calls the same way (Result.State: 5 allocations, now 1); 113.5 before Unmarshal counted the model calls before making their list, interned their agents and built their checks' paths only on failure; 115.5 before Marshal shared the calls list (appended to only) instead of copying it and sized its buffer for the calls; 106.4 before per-model-call records (state.ModelCall: the record, its delta piece, its list in Marshal and Unmarshal); 110.5 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 102.5 before one Turn served all the turns of a run, cleared for each (its ~900 bytes were a third of a Runner turn's); 101.4 before the core's tool stage returned a completed call's result in the call itself (ToolCall.result), not a new ToolResult; 100.4 before Decision.Check compared the arguments' fingerprint without making it a string; 99.4 before the user and assistant message encoders sized their buffers for the JSON they write (48 and 128 bytes, not 40 and 120: every such item allocated twice)"},
	{"checkpoint/marshal/items=10", 4, "state.Marshal of 10 items; 6 with the run's 5 model call records before their list was shared, not copied (appended to only), and the buffer sized for them"},
	{"checkpoint/unmarshal/items=10", 19, "state.Unmarshal of 10 items: their raw JSON and strings in shared chunks, the run's 5 model calls in one list made to their count, their agent names interned with the run's; 20 before the options' config stayed off the heap when given none; 34 when their list grew call by call, each check built its JSON path and each agent name was a string of its own; 19 before model call records"},
	{"crashsafe/memory/persistence/history=10", 10.6, "a tool turn's appends on session/memory; 19.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 15.8 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call); 11.8 before a Result read its new items from the run instead of keeping a copy of each (its slice grew by doubling: ~0.1 allocation and ~370 B per turn); 11.7 before session/memory kept a call ID's first position inline instead of in a slice of its own (one allocation per call appended)"},
	{"crashsafe/memory/checkpoint/history=10", 34.0, "the crash-safe tool turn on memory: saves and appends; 35.2 before session/memory kept a call ID's first position inline instead of in a slice of its own (one allocation per call appended), 35.2 before a Result read its new items from the run, 43.1 before a head's extension records were written by hand, not by encoding/json (a sorted copy of the keys and a reflected copy of each value: 4 per save, 2 saves a turn), 70.5 before a delta's pieces (items, model calls) and its record were each written into one buffer made to size, 72.5 before a delta's head stopped copying the guardrail results and model calls it leaves out, 64.1 before per-model-call records (the record, its delta piece, memstore keeping it); 51.8 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 47.8 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/sqlite/persistence/history=10", 83.2, "a tool turn's appends on SQLite: the append's first statement, prepared, takes the session's write stamp with the run's place, then one prepared insert; 84.0 before the take of the write stamp a prepared SELECT (the stamp read from session_items_stamps, migration 0009), not an upsert with RETURNING, which SQLite compiled as a trigger (-1); 79.3 when the take of the stamp was parsed by each append (+9 through database/sql's Stmt and its rows: the parse of that upsert with RETURNING was a fifth of an append's CPU, 1.10 -> 0.86 s of CPU for 3 000 appends, the fastest of 8, the raw driver 0.51); 79.7 before the insert was prepared (tx.StmtContext costs 3 allocations and saves SQLite's parse of the statement, most of the append's CPU; 51.8 when the insert read the place itself, before write stamps; 90.0 before each bound value was boxed once, the JSON copied into one buffer, the statement texts cached and Calls' pointers put in one array); 83.2 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 88.2 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/sqlite/checkpoint/history=10", 206.4, "the crash-safe tool turn on SQLite, each save's head written as its own compare-and-swap, each append taking a write stamp first, both the take and the insert prepared; 206.9 before the take of the write stamp a prepared SELECT (the stamp read from session_items_stamps, migration 0009), not an upsert with RETURNING, which SQLite compiled as a trigger (-1); 215.1 before a head's extension records were written by hand (-4 per save, see memory's row); 211.8 when the take was parsed by each append (+9, see the persistence row), +3 for the insert prepared; 234.5 before a delta's pieces and record were each written into one buffer made to size, 236.4 before a delta's head stopped copying the lists it leaves out, 214.9 before per-model-call records (one more piece row per turn), 186.9 before write stamps, 244.6 with a query of the stored version first, 282.9 before the appends' savings; 253.9 before the run index (state.Lister: one more statement per save, the index upsert, in the save's transaction); 215.7 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 219.0 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"sealed/sqlite-sealed/persistence/history=10", 82.9, "a tool turn's appends on SQLite with encryption at rest, the keyring SQLite's item codec (sqlite.WithItemCodec): the store seals each item into its insert's buffer and opens each row it reads before its one parse, as plain as SQLite's own (88.2); 84.1 before the take of the write stamp a prepared SELECT (the stamp read from session_items_stamps, migration 0009), not an upsert with RETURNING, which SQLite compiled as a trigger (-1); 79.1 before the take of the write stamp was prepared (+9, see SQLite's row); 89.0 when the wrapper sealed each item into a state.Item (its JSON copied and parsed) and parsed each sealed row before opening it; 88.2 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"sealed/sqlite-sealed/checkpoint/history=10", 207.9, "the crash-safe tool turn on SQLite with encryption at rest: +2 over SQLite; 209.0 before the take of the write stamp a prepared SELECT (the stamp read from session_items_stamps, migration 0009), not an upsert with RETURNING, which SQLite compiled as a trigger (-1); 210.1 (209.8 measured, +3) before a sealed delta's buffer had room for the sealed head, whose base64 grew the whole buffer on every save (one allocation and copy of every sealed part), and before its pieces and context were kept as ciphertext bytes rather than JSON strings of base64 (no allocation, 2.0 KB less per turn with the room); 217.8 (218.0 measured) before a head's extension records were written by hand (-4 per save, see memory's row); 214.2 before the take of the write stamp was prepared (+9, see SQLite's row); a save's sealed head, pieces and context written into one buffer made to size, each ciphertext into a pooled scratch; 220.0 when each sealed part had a buffer of its own and each save its scratch; 253.5 before the items were sealed in the store's buffer and the key retry's errors.As ran on success only; 222.2 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/postgres/persistence/history=10", 88.7, "a tool turn's appends on PostgreSQL: one statement, one round trip; 101.6 before rowcodec.Calls put its pointers in one array; 96.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 92.9 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/postgres/checkpoint/history=10", 157.1, "the crash-safe tool turn on PostgreSQL: two statements, two round trips; 165.0 before a head's extension records were written by hand (-4 per save, see memory's row); 192.3 before a delta's pieces and record were each written into one buffer made to size, 194.3 before a delta's head stopped copying the lists it leaves out, 183.8 before per-model-call records (one more piece in the save's statement per turn), 188.8 before rowcodec.Calls put its pointers in one array; 183.9 before the run index (state.Lister: its row, written by the save's own statement); 173.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 169.6 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/redis/persistence/history=10", 31.5, "a tool turn's appends on Redis, the batch one argument of the script, the session's seven keys slices of one string; 41.7 when each key was a string of its own; 55.9 when each item was four arguments (its Seq and its ID key made with fmt.Sprintf, each boxed); 55.6 before write stamps (two more keys per append: the stamps set and the counter); 59.6 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 35.7 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
	{"crashsafe/redis/checkpoint/history=10", 108.9, "the crash-safe tool turn on Redis, the append's batch one argument of the script, the session's keys slices of one string; 116.9 before a head's extension records were written by hand (-4 per save, see memory's row); 126.9 when each key was a string of its own; 141.5 when each item was four arguments; 164.2 before a delta's pieces and record were each written into one buffer made to size, 166.2 before a delta's head stopped copying the lists it leaves out, 155.9 before per-model-call records (one more piece in the save script's arguments per turn), 151.9 before write stamps (two more keys per append), 135.8 before the run index (state.Lister: the status sets and the summary hash, updated by the save script); 145.5 before a turn's first tool call and its slots in Calls and Results lived in the Turn (3 fewer per turn with one call), 1 more before its model call did; 120.9 before the core's turn cuts (one Turn per run, a call's output item made once, the ledger carrying the turn's context, a completed call's result in the call)"},
}

// allocIterations is how many units each scenario runs for its count.
const allocIterations = 400

// slack is how far above its budget a count may be: half an allocation,
// so any new allocation per unit fails.
const slack = 0.5

// TestAllocBudgets runs each budgeted scenario as a benchmark and fails
// if it allocates more per unit than its budget. It does not run under
// -race, which changes the counts; .ci/run runs it without. Set
// TURNKIT_ALLOCS_PRINT=1 to print every count beside its budget.
func TestAllocBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race; .ci/run runs this test without it")
	}
	if testing.Short() {
		t.Skip("runs the benchmarks; not in -short")
	}
	byName := map[string]scenario.Scenario{}
	for _, s := range scenario.All() {
		byName[s.Name] = s
	}
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set(fmt.Sprintf("%dx", allocIterations)); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	print := os.Getenv("TURNKIT_ALLOCS_PRINT") != ""
	for _, bg := range budgets {
		s, ok := byName[bg.scenario]
		if !ok {
			t.Errorf("budget for %q: no such scenario", bg.scenario)
			continue
		}
		if s.Skip != "" {
			t.Logf("%s: skipped: %s", s.Name, s.Skip)
			continue
		}
		r := testing.Benchmark(s.Bench)
		if r.N == 0 {
			t.Errorf("%s: the benchmark failed", s.Name)
			continue
		}
		got := float64(r.MemAllocs) / float64(r.N) / float64(s.PerOp)
		if print {
			fmt.Printf("%-45s %8.2f allocs/%s  budget %6.1f\n", s.Name, got, s.Unit, bg.allocs)
		}
		if got > bg.allocs+slack {
			t.Errorf("%s: %.2f allocations per %s, over its budget of %.1f (%s); remove the new allocation, or raise the budget in budget_test.go with the reason", s.Name, got, s.Unit, bg.allocs, bg.why)
		}
	}
}
