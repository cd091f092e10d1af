package redis_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// toolTurnInstrBudget is the most instructions the Redis server may run
// for a tool turn of the store (the save before the tool, then SaveAppend
// of the call and its output: BenchmarkToolTurnInstructions' turn), as a
// multiple of what it runs for the plain writes of the same turn
// (raw-same-writes: two MULTI/EXECs), over instrBudgetTurns turns of one
// run each, on the server version it was measured on. Counted under
// callgrind, the figures are the same from one run to the next within
// about 1% (Lua's collector and the server's tables are not at the same
// point from one run to the next), their ratio 2.348 to 2.368 in twelve
// runs on three servers, so unlike a turn's time it can be checked in a
// test: a change to the scripts or their arguments that makes the server
// work some 1.5% more (4 000 instructions a turn: a read more; four
// functions in each save script, three of them calling the others, read
// 2.398) fails here, and raises the budget in the same commit, with its
// reason, as bench/budget_test.go does for allocations.
//
// 2.35 measured (2026-12-05, Redis 7.0.15: 297 900 against 126 700): the
// save scripts make the listing's functions only when a save files a run
// anew, the arguments carry no field twice; 2.47 before (312 700 against
// 126 600; see bench/README.md, "Redis's crash-safe turn").
const (
	toolTurnInstrBudget = 2.39
	instrBudgetTurns    = 1000
	instrBudgetRedis    = "7.0.15"
)

// TestToolTurnInstructionBudget holds the store's tool turn within
// toolTurnInstrBudget of the plain writes, in the server's instructions.
// It needs a Redis server under callgrind (TURNKIT_REDIS_CALLGRIND_URL,
// which .ci/services starts), and is skipped on a server of another
// version than the budget was measured on: the count is the server's
// code's.
func TestToolTurnInstructionBudget(t *testing.T) {
	url := os.Getenv("TURNKIT_REDIS_CALLGRIND_URL")
	if url == "" {
		testenv.Missing(t, `TURNKIT_REDIS_CALLGRIND_URL is not set (a Redis server under valgrind's callgrind); start the servers with eval "$(.ci/services start)"`)
	}
	client, prefix := testClientAt(t, url)
	info, err := client.Info(context.Background(), "server").Result()
	must(t, err)
	if v := infoField(info, "redis_version"); v != instrBudgetRedis {
		t.Skipf("the budget is of Redis %s's instructions; the server is %s", instrBudgetRedis, v)
	}
	cg := openCallgrind(t, client)
	s := redis.New(client, redis.WithPrefix(prefix))
	store := countTurns(t, cg, s, s.Save, func(ctx context.Context, r *state.Run, sid string, items []state.Item) error {
		return s.SaveAppend(ctx, r, sid, items)
	})
	w := rawTurnWrites{client: client, s: s, prefix: prefix}
	raw := countTurns(t, cg, s, func(ctx context.Context, r *state.Run) error { return w.write(ctx, r, "", nil) }, w.write)
	got := store / raw
	t.Logf("a tool turn: %.0f server instructions, the plain writes %.0f: %.3f (budget %.3f)", store, raw, got, toolTurnInstrBudget)
	if got > toolTurnInstrBudget {
		t.Errorf("a tool turn takes the Redis server %.3f times the plain writes' instructions (%.0f against %.0f), over its budget of %.3f: remove what the scripts or their arguments gained, or raise toolTurnInstrBudget with the reason", got, store, raw, toolTurnInstrBudget)
	}
}

// countTurns makes instrBudgetTurns tool turns of one run with save and
// commit, after five not counted, and returns the server's instructions
// a turn, as cg counts them.
func countTurns(t *testing.T, cg *callgrind, s *redis.Store, save func(context.Context, *state.Run) error,
	commit func(context.Context, *state.Run, string, []state.Item) error) float64 {
	ctx := context.Background()
	r, sid, first := countedRun(t, cg, s, save, commit)
	for turn := first; turn < first+instrBudgetTurns; turn++ {
		must(t, toolTurn(ctx, r, sid, turn, save, commit))
	}
	return cg.count(t) / instrBudgetTurns
}

// infoField returns the value of field in a reply of INFO, or "".
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
