package redis_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

var (
	testKey = []byte("redis-test-key-0123456789abcdef!")
	signed  = redis.WithCodec(
		[]state.MarshalOption{state.WithSigningKey("k", testKey)},
		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k": testKey})})
)

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// addTurn records one tool turn on r (a call and its output), as the
// runner does.
func addTurn(tb testing.TB, r *state.Run, turn int) {
	tb.Helper()
	first := runcore.Reserve(r, 2)
	call := fmt.Sprintf("call_%d", turn)
	must(tb, runcore.Record(r, state.ToolCall("fc_"+call, call, "lookup", `{"q":"weather in Paris"}`).WithSeq(first)))
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	must(tb, runcore.Record(r, state.ToolOutput(call, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(first+1)))
	runcore.SetTurn(r, turn)
	runcore.AddUsage(r, state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 3})
}

// history returns n items of session history.
func history(n int) []state.Item {
	out := make([]state.Item, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = state.UserMessage(fmt.Sprintf("question %d: what is the weather in Paris?", i)).WithSeq(int64(i + 1))
		} else {
			out[i] = state.AssistantMessage(fmt.Sprintf("msg_%d", i), "It is 18°C and clear in Paris.").WithSeq(int64(i + 1))
		}
	}
	return out
}

func wantSame(t *testing.T, s state.Store, want *state.Run) {
	t.Helper()
	got, err := s.Load(t.Context(), want.ID())
	must(t, err)
	if d := statetest.Diff(t, got, want); d != "" {
		t.Fatalf("Load differs from the live run (-want +got):\n%s", d)
	}
	if got.Version() != want.Version() {
		t.Fatalf("loaded version %d, want %d", got.Version(), want.Version())
	}
}

// A writeCounter counts the commands a client sends and the bytes of
// their arguments: what a save writes, measured, not timed.
type writeCounter struct{ cmds, bytes atomic.Int64 }

func (c *writeCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *writeCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *writeCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *writeCounter) add(cmd goredis.Cmder) {
	c.cmds.Add(1)
	var n int
	for _, a := range cmd.Args() {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		case encoding.BinaryMarshaler: // the store's arguments, slices of its buffers
			b, err := v.MarshalBinary()
			if err != nil {
				panic(err)
			}
			n += len(b)
		default:
			n += len(fmt.Sprint(v))
		}
	}
	c.bytes.Add(int64(n))
}

func (c *writeCounter) reset() { c.cmds.Store(0); c.bytes.Store(0) }

// TestSaveWritesWhatChanged saves runs with a history of 10 and of 2 000
// items every turn, for 300 turns, and counts what each save sends: one
// command (two in a cluster), two new item fields, and as many bytes whatever the history
// (but for the digits of positions) and whatever the turn (but for the
// digits of the turn, the usage and the positions).
func TestSaveWritesWhatChanged(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		counter := &writeCounter{}
		client.AddHook(counter)
		s := newStore(t, client, redis.WithPrefix(prefix), signed)
		// One script; in a cluster, a second for the listing's index,
		// whose keys are in a hash slot of their own.
		want := int64(1)
		if _, standalone := client.(*goredis.Client); !standalone {
			want = 2
		}
		const turns = 300
		sent := map[int][]int64{}
		for _, n := range []int{10, 2000} {
			r := state.NewRun(newRunID(), "assistant")
			runcore.SetHistory(r, history(n))
			runcore.AddInput(r, state.UserMessage("and tomorrow?"))
			must(t, s.Save(t.Context(), r))
			itemsKey := s.RunKeys(r.ID())[1]
			sent[n] = make([]int64, turns+1)
			for turn := 1; turn <= turns; turn++ {
				addTurn(t, r, turn)
				before := client.HLen(t.Context(), itemsKey).Val()
				counter.reset()
				must(t, s.Save(t.Context(), r))
				cmds, bytes := counter.cmds.Load(), counter.bytes.Load()
				if cmds != want && turn > 1 { // the first may load the script
					t.Fatalf("history %d, turn %d: the save sent %d commands, want %d", n, turn, cmds, want)
				}
				if added := client.HLen(t.Context(), itemsKey).Val() - before; added != 2 {
					t.Fatalf("history %d, turn %d: the save stored %d items, want 2", n, turn, added)
				}
				sent[n][turn] = bytes
			}
			wantSame(t, s, r)
		}
		for turn := 2; turn <= turns; turn++ {
			if a, b := sent[10][turn], sent[2000][turn]; b > a+16 {
				t.Fatalf("turn %d: a save sent %d bytes with a history of 10 items, %d with 2 000", turn, a, b)
			}
		}
		if a, b := sent[2000][100], sent[2000][turns]; b > a+16 || a > 2048 {
			t.Fatalf("a save sent %d bytes at turn 100, %d at turn %d", a, b, turns)
		}
		t.Logf("bytes per save at turn 2, 100, %d: history 10: %d %d %d; history 2000: %d %d %d", turns,
			sent[10][2], sent[10][100], sent[10][turns], sent[2000][2], sent[2000][100], sent[2000][turns])
	})
}

// TestSaveManyItems saves, then save-appends, a delta of more items than
// one Lua call takes arguments (8 000: a script stores them with one HSET
// a 1 000), and loads each run back whole.
func TestSaveManyItems(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		s := newStore(t, client, redis.WithPrefix(prefix))
		for _, commit := range []bool{false, true} {
			r := state.NewRun(newRunID(), "assistant")
			runcore.AddInput(r, state.UserMessage("go"))
			const turns = 2100 // 4 200 items, 8 400 arguments
			for turn := 1; turn <= turns; turn++ {
				addTurn(t, r, turn)
			}
			if commit {
				must(t, s.SaveAppend(t.Context(), r, "session-"+r.ID(), r.Items().From(r.Len()-2).Slice()))
			} else {
				must(t, s.Save(t.Context(), r))
			}
			if n := client.HLen(t.Context(), s.RunKeys(r.ID())[1]).Val(); n != 2*turns+1 {
				t.Fatalf("commit %v: the checkpoint holds %d items, want %d", commit, n, 2*turns+1)
			}
			wantSame(t, s, r)
		}
	})
}

// TestDeltaTampered edits, deletes and adds a stored item, and edits the
// stored context, behind the store's back: a signed store refuses each
// with ErrTampered; an unsigned one with ErrInvalid.
func TestDeltaTampered(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		ctx := t.Context()
		edits := []struct {
			name string
			edit func(t *testing.T, keys []string)
		}{
			{"EditItem", func(t *testing.T, keys []string) {
				field := fieldOf(t, client, keys[1], "call_2")
				v := client.HGet(ctx, keys[1], field).Val()
				must(t, client.HSet(ctx, keys[1], field, strings.Replace(v, "Paris", "Lyon", 1)).Err())
			}},
			{"DeleteItem", func(t *testing.T, keys []string) {
				must(t, client.HDel(ctx, keys[1], fieldOf(t, client, keys[1], "call_2")).Err())
			}},
			{"AddItem", func(t *testing.T, keys []string) {
				v := client.HGet(ctx, keys[1], fieldOf(t, client, keys[1], "call_2")).Val()
				must(t, client.HSet(ctx, keys[1], "9999", v).Err())
			}},
			{"ReplayItemFromEarlierSave", func(t *testing.T, keys []string) {
				field := fieldOf(t, client, keys[1], "call_2")
				v := client.HGet(ctx, keys[1], field).Val()
				_, data, _ := strings.Cut(v, ":")
				must(t, client.HSet(ctx, keys[1], field, "1:"+data).Err())
			}},
			{"EditContext", func(t *testing.T, keys []string) {
				v := client.Get(ctx, keys[2]).Val()
				must(t, client.Set(ctx, keys[2], strings.Replace(v, "Paris", "Lyon", 1), 0).Err())
			}},
			{"DeleteContext", func(t *testing.T, keys []string) {
				must(t, client.Del(ctx, keys[2]).Err())
			}},
		}
		for _, tt := range edits {
			t.Run(tt.name, func(t *testing.T) {
				for _, sign := range []bool{true, false} {
					opts := []redis.Option{redis.WithPrefix(prefix)}
					if sign {
						opts = append(opts, signed)
					}
					s := newStore(t, client, opts...)
					r := state.NewRun(newRunID(), "assistant")
					runcore.SetHistory(r, history(4))
					for turn := 1; turn <= 3; turn++ {
						addTurn(t, r, turn)
						must(t, s.Save(ctx, r))
					}
					wantSame(t, s, r)
					tt.edit(t, s.RunKeys(r.ID()))
					_, err := s.Load(ctx, r.ID())
					var se *state.StoreError
					switch {
					case !errors.As(err, &se):
						t.Fatalf("signed %v: Load = %v, want a *state.StoreError", sign, err)
					case sign && !errors.Is(err, state.ErrTampered):
						t.Fatalf("signed: Load = %v, want ErrTampered", err)
					case !sign && !errors.Is(err, state.ErrInvalid):
						t.Fatalf("unsigned: Load = %v, want ErrInvalid", err)
					}
				}
			})
		}
	})
}

// fieldOf returns the field of the items hash whose item contains text.
func fieldOf(t *testing.T, client goredis.UniversalClient, key, text string) string {
	t.Helper()
	all, err := client.HGetAll(t.Context(), key).Result()
	must(t, err)
	for f, v := range all {
		if strings.Contains(v, text) && strings.Contains(v, "function_call\"") {
			return f
		}
	}
	t.Fatalf("no item with %q in %s: %v", text, key, all)
	return ""
}

// TestLegacyCheckpoint stores checkpoints as the earlier version of this
// package did (the whole checkpoint in the head hash, at version v, the
// document at v-1), from state's golden files, and checks that they load,
// that the next save is full and the one after a delta on top.
func TestLegacyCheckpoint(t *testing.T) {
	goldenKey := []byte("golden test key, not a secret!!!")
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		for _, tt := range []struct {
			file string
			opts []redis.Option
			dec  []state.UnmarshalOption
		}{
			{"paused", nil, nil},
			{"signed", []redis.Option{redis.WithCodec(
				[]state.MarshalOption{state.WithSigningKey("golden", goldenKey)},
				[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"golden": goldenKey})})},
				[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"golden": goldenKey})}},
		} {
			t.Run(tt.file, func(t *testing.T) {
				ctx := t.Context()
				data, err := os.ReadFile("../../state/testdata/" + tt.file + ".golden.json")
				must(t, err)
				want, err := state.Unmarshal(data, tt.dec...)
				must(t, err)
				runcore.SetVersion(want, want.Version()+1)
				s := newStore(t, client, append(tt.opts, redis.WithPrefix(prefix))...)
				keys := s.RunKeys(want.ID())
				must(t, client.HSet(ctx, keys[0], "v", want.Version(), "d", data).Err())
				wantSame(t, s, want)

				got, err := s.Load(ctx, want.ID())
				must(t, err)
				addTurn(t, got, 10)
				must(t, s.Save(ctx, got)) // full: the items go to their hash
				n := client.HLen(ctx, keys[1]).Val()
				if want := got.Len() + len(got.GuardrailResults()) + len(got.ModelCalls()); n != int64(want) {
					t.Fatalf("after the first save %d pieces (items, guardrail results, model calls) are stored, want %d", n, want)
				}
				wantSame(t, s, got)
				addTurn(t, got, 11)
				must(t, s.Save(ctx, got))
				if m := client.HLen(ctx, keys[1]).Val(); m != n+2 {
					t.Fatalf("the second save stored %d items, want 2", m-n)
				}
				wantSame(t, s, got)
			})
		}
	})
}

// TestDeleteRemovesEveryKey checks that Delete leaves none of a run's keys.
func TestDeleteRemovesEveryKey(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		s := newStore(t, client, redis.WithPrefix(prefix))
		r := statetest.SampleRun(t, newRunID())
		must(t, s.Save(t.Context(), r))
		addTurn(t, r, 3)
		must(t, s.Save(t.Context(), r))
		keys := s.RunKeys(r.ID())
		if n := client.Exists(t.Context(), keys...).Val(); n != 3 {
			t.Fatalf("%d of the run's keys exist after saves, want 3", n)
		}
		must(t, s.Delete(t.Context(), r.ID()))
		if n := client.Exists(t.Context(), keys...).Val(); n != 0 {
			t.Fatalf("%d of the run's keys exist after Delete", n)
		}
	})
}

// TestSaveAppend checks that SaveAppend saves and appends both or neither
// on a standalone server, and on the cluster (save, then append) that a
// refused save appends nothing and a retry appends nothing twice.
func TestSaveAppend(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		_, cluster := client.(*goredis.ClusterClient)
		ctx := t.Context()
		s := newStore(t, client, redis.WithPrefix(prefix), signed)
		list := func(sid string) []state.Item {
			t.Helper()
			items, err := s.List(ctx, sid, 0)
			must(t, err)
			return items
		}
		newRun := func() (*state.Run, string) {
			r := state.NewRun(newRunID(), "assistant")
			runcore.SetHistory(r, history(3))
			must(t, s.Save(ctx, r))
			return r, "session-" + r.ID()
		}
		turn := func(r *state.Run, n int) []state.Item {
			addTurn(t, r, n)
			return r.Items().From(r.Len() - 2).Slice()
		}

		t.Run("Commits", func(t *testing.T) {
			r, sid := newRun()
			for n := 1; n <= 3; n++ {
				items := turn(r, n)
				must(t, s.SaveAppend(ctx, r, sid, items))
				wantSame(t, s, r)
				if got := list(sid); len(got) != 2*n {
					t.Fatalf("turn %d: the session holds %d items, want %d", n, len(got), 2*n)
				}
			}
		})
		t.Run("VersionConflictAppendsNothing", func(t *testing.T) {
			r, sid := newRun()
			other, err := s.Load(ctx, r.ID())
			must(t, err)
			must(t, s.Save(ctx, other)) // another worker went on
			items := turn(r, 1)
			err = s.SaveAppend(ctx, r, sid, items)
			var se *state.StoreError
			if !errors.Is(err, state.ErrConflict) || !errors.As(err, &se) || se.Have != 1 || se.Stored != 2 {
				t.Fatalf("SaveAppend of a stale run = %v, want a StoreError wrapping ErrConflict (have 1, stored 2)", err)
			}
			if got := list(sid); len(got) != 0 {
				t.Fatalf("a refused save appended %d items", len(got))
			}
			if r.Version() != 1 {
				t.Fatalf("run version %d after a conflict, want 1", r.Version())
			}
		})
		t.Run("InvalidAppendSavesNothing", func(t *testing.T) {
			r, sid := newRun()
			items := append(turn(r, 1), state.UserMessage("no seq"))
			if err := s.SaveAppend(ctx, r, sid, items); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("SaveAppend with an item without Seq = %v, want ErrInvalid", err)
			}
			if got, err := s.Load(ctx, r.ID()); err != nil || got.Version() != 1 || got.Len() != 0 {
				t.Fatalf("after a refused SaveAppend the checkpoint is %v (%v), want version 1", got, err)
			}
		})
		t.Run("ConflictingAppendSavesNothing", func(t *testing.T) {
			if cluster {
				t.Skip("in a cluster SaveAppend saves, then appends: not one write")
			}
			r, sid := newRun()
			items := turn(r, 1)
			// Another item is stored at the output's position.
			must(t, s.Append(ctx, sid, r.ID(), []state.Item{state.AssistantMessage("msg_x", "other").WithSeq(items[1].Seq())}))
			if err := s.SaveAppend(ctx, r, sid, items); !errors.Is(err, session.ErrConflict) {
				t.Fatalf("SaveAppend over a different stored item = %v, want session.ErrConflict", err)
			}
			got, err := s.Load(ctx, r.ID())
			must(t, err)
			if got.Version() != 1 || got.Len() != 0 || r.Version() != 1 {
				t.Fatalf("after a refused append: stored version %d with %d items, run version %d; want 1, 0, 1", got.Version(), got.Len(), r.Version())
			}
			if got := list(sid); len(got) != 1 {
				t.Fatalf("the session holds %d items, want the 1 stored before", len(got))
			}
			// The run's next save is the same delta, and goes through once
			// the position is free.
			must(t, s.Clear(ctx, sid))
			must(t, s.SaveAppend(ctx, r, sid, items))
			wantSame(t, s, r)
		})
		t.Run("RetryAppendsOnce", func(t *testing.T) {
			r, sid := newRun()
			items := turn(r, 1)
			must(t, s.SaveAppend(ctx, r, sid, items))
			// The reply was lost: a worker loads the run and makes the
			// same commit again.
			again, err := s.Load(ctx, r.ID())
			must(t, err)
			must(t, s.SaveAppend(ctx, again, sid, items))
			if got := list(sid); len(got) != 2 {
				t.Fatalf("after a retry the session holds %d items, want 2", len(got))
			}
			if again.Version() != 3 {
				t.Fatalf("version after the retry %d, want 3", again.Version())
			}
			wantSame(t, s, again)
		})
	})
}

// TestSaveLeavesTheListingsSets watches, with MONITOR on a connection of
// its own, what the save scripts do to the runs' listing: the first save
// of a run (with a session) files it in the sets of every run, of its
// status, of its session and of both, and a later save of the same
// status and session writes only its summary (one HSET: the serial comes
// from the head, the summary is not read), not the sets again.
// Standalone only: MONITOR shows one server.
func TestSaveLeavesTheListingsSets(t *testing.T) {
	ctx := t.Context()
	client, prefix := testClient(t)
	s := newStore(t, client, redis.WithPrefix(prefix))
	mon := monitor(t, client)
	index := prefix + "runs:{index}:"
	r, sid := runOfItsSession()
	must(t, s.Save(ctx, r))
	first := mon.until(t, client, index)
	addTurn(t, r, 1)
	must(t, s.Save(ctx, r))
	second := mon.until(t, client, index)
	if n := count(first, `"ZADD"`); n != 4 {
		t.Fatalf("the first save made %d ZADDs on the listing, want 4: %q", n, first)
	}
	if len(second) != 1 || count(second, `"HSET"`) != 1 {
		t.Fatalf("a save of the same status and session sent the listing %q, want one HSET", second)
	}
	if page, err := s.ListRuns(ctx, state.RunQuery{SessionID: sid}); err != nil || len(page.Runs) != 1 || page.Runs[0].Turn != 1 {
		t.Fatalf("ListRuns = %+v, %v, want the run at turn 1", page, err)
	}
}

// TestSaveFilesARunTheListingLost removes the listing's keys between two
// saves of a run of the same status and session, as by hand: the second
// save, which would only have written the run's summary, finds it gone
// and files the run anew, so that the listing holds it again.
func TestSaveFilesARunTheListingLost(t *testing.T) {
	ctx := t.Context()
	client, prefix, s, r, sid := savedRunOfItsSession(t)
	keys, err := client.Keys(ctx, prefix+"runs:{index}:*").Result()
	must(t, err)
	if len(keys) == 0 {
		t.Fatal("the first save left the listing empty")
	}
	must(t, client.Del(ctx, keys...).Err())
	addTurn(t, r, 1)
	must(t, s.Save(ctx, r))
	for _, q := range []state.RunQuery{{}, {SessionID: sid}, {SessionID: sid, Status: state.RunUnfinished}} {
		if page, err := s.ListRuns(ctx, q); err != nil || len(page.Runs) != 1 || page.Runs[0].Turn != 1 {
			t.Errorf("ListRuns(%+v) = %+v, %v, want the run at turn 1", q, page, err)
		}
	}
}

// TestSaveGivesAHeadItsSerial saves a run whose head keeps no serial in
// the listing, as the heads of an earlier version of the package do: the
// save files the run through the listing's summary and gives the head
// the serial that summary holds, which later saves use.
func TestSaveGivesAHeadItsSerial(t *testing.T) {
	ctx := t.Context()
	client, prefix, s, r, sid := savedRunOfItsSession(t)
	head := s.RunKeys(r.ID())[0]
	must(t, client.HDel(ctx, head, "s").Err())
	addTurn(t, r, 1)
	must(t, s.Save(ctx, r))
	serial, err := client.HGet(ctx, head, "s").Result()
	if err != nil {
		t.Fatalf("the head's serial after a save: %v", err)
	}
	sum, err := client.HGet(ctx, prefix+"runs:{index}:sum", r.ID()).Result()
	must(t, err)
	if !strings.HasPrefix(sum, serial+":") {
		t.Fatalf("the head keeps serial %q, the listing's summary is %q", serial, sum)
	}
	addTurn(t, r, 2)
	must(t, s.Save(ctx, r))
	if page, err := s.ListRuns(ctx, state.RunQuery{SessionID: sid}); err != nil || len(page.Runs) != 1 || page.Runs[0].Turn != 2 {
		t.Fatalf("ListRuns = %+v, %v, want the run at turn 2", page, err)
	}
}

// savedRunOfItsSession returns a client, a prefix of its own, a store
// under it, and a run of a session of its own (runOfItsSession) that the
// store saved once, with the session's ID.
func savedRunOfItsSession(t *testing.T) (*goredis.Client, string, *redis.Store, *state.Run, string) {
	t.Helper()
	client, prefix := testClient(t)
	s := newStore(t, client, redis.WithPrefix(prefix))
	r, sid := runOfItsSession()
	must(t, s.Save(t.Context(), r))
	return client, prefix, s, r, sid
}

// runOfItsSession returns a new run with one input, of a session of its
// own, and the session's ID.
func runOfItsSession() (*state.Run, string) {
	r := state.NewRun(newRunID(), "assistant")
	sid := "session-" + r.ID()
	runcore.SetSessionID(r, sid)
	runcore.AddInput(r, state.UserMessage("go"))
	return r, sid
}

func count(lines []string, s string) (n int) {
	for _, l := range lines {
		n += strings.Count(l, s)
	}
	return n
}

// A monitorConn reads the commands the server runs (MONITOR), from a
// connection of its own, read in the test's goroutine.
type monitorConn struct {
	conn net.Conn
	r    *bufio.Reader
	n    int // markers sent
}

func monitor(t *testing.T, client *goredis.Client) *monitorConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", client.Options().Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	m := &monitorConn{conn: conn, r: bufio.NewReader(conn)}
	if o := client.Options(); o.Password != "" {
		m.send(t, "AUTH", o.Username, o.Password)
		m.line(t)
	}
	m.send(t, "MONITOR")
	if l := m.line(t); l != "+OK" {
		t.Fatalf("MONITOR = %q", l)
	}
	return m
}

func (m *monitorConn) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := m.conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

func (m *monitorConn) line(t *testing.T) string {
	t.Helper()
	_ = m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := m.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(l, "\r\n")
}

// until sends a marker through client and returns the commands that
// scripts ran before it naming a key that starts with prefix.
func (m *monitorConn) until(t *testing.T, client *goredis.Client, prefix string) []string {
	t.Helper()
	m.n++
	marker := fmt.Sprintf("%smarker-%d", prefix, m.n)
	must(t, client.Exists(t.Context(), marker).Err())
	var out []string
	for {
		l := m.line(t)
		if strings.Contains(l, `"`+marker+`"`) {
			return out
		}
		if strings.Contains(l, " lua] ") && strings.Contains(l, `"`+prefix) {
			out = append(out, l)
		}
	}
}

// TestScriptsAfterFlush empties the servers' script caches (SCRIPT FLUSH,
// as a restart does, or a failover to a replica that never ran the
// scripts) before each of the store's calls on its hot paths: Append,
// Save and SaveAppend find their script's digest unknown and send its
// source, and what they store is what they store otherwise.
func TestScriptsAfterFlush(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		ctx := t.Context()
		s := newStore(t, client, redis.WithPrefix(prefix))
		flush := func() {
			t.Helper()
			if c, ok := client.(*goredis.ClusterClient); ok {
				must(t, c.ForEachShard(ctx, func(ctx context.Context, n *goredis.Client) error { return n.ScriptFlush(ctx).Err() }))
				return
			}
			must(t, client.ScriptFlush(ctx).Err())
		}
		sid := "flushed-" + newRunID()
		flush()
		must(t, s.Append(ctx, sid, "history", history(4)))
		r := state.NewRun(newRunID(), "assistant")
		runcore.SetSessionID(r, sid)
		save := func(ctx context.Context, r *state.Run) error { flush(); return s.Save(ctx, r) }
		commit := func(ctx context.Context, r *state.Run, sid string, items []state.Item) error {
			flush()
			return s.SaveAppend(ctx, r, sid, items)
		}
		for turn := 1; turn <= 2; turn++ {
			must(t, toolTurn(ctx, r, sid, turn, save, commit))
		}
		wantSame(t, s, r)
		items, err := s.List(ctx, sid, 0)
		if err != nil || len(items) != 4+2*2 {
			t.Fatalf("List = %d items, %v; want the history's 4 and the two turns' calls and outputs", len(items), err)
		}
	})
}
