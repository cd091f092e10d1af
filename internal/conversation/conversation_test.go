package conversation_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// A backend opens the stores of one deployment; open may be called again
// to play another process on the same data.
type backend struct {
	name string
	open func(t *testing.T) (session.Store, state.Store)
}

// sqliteBackend opens the SQLite file at path, the sessions and the
// checkpoints in one store.
func sqliteBackend(path string) backend {
	return backend{"sqlite", func(t *testing.T) (session.Store, state.Store) {
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	}}
}

func backends(t *testing.T) []backend {
	mem := memory.New()
	states := memstore.New()
	path := filepath.Join(t.TempDir(), "conv.db")
	return []backend{
		{"memory", func(t *testing.T) (session.Store, state.Store) { return mem, states }},
		sqliteBackend(path),
		{"postgres", func(t *testing.T) (session.Store, state.Store) {
			s, err := postgres.Open(t.Context(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s, s
		}},
		{"redis", func(t *testing.T) (session.Store, state.Store) {
			s, err := redis.Open(t.Context(), testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s, s
		}},
	}
}

// chatModel answers each message with a lookup, then a reply; a message
// that says "transfer" asks for a transfer (which needs approval) instead
// of the lookup. It records what every call was sent.
func chatModel() *scripted.Model {
	return scripted.Rules(
		scripted.On(scripted.AfterOutput(""), scripted.Reply("Done.")),
		scripted.On(scripted.LastUserContains("transfer"), scripted.CallTool("transfer", `{}`)),
		scripted.On(scripted.Any(), scripted.CallTool("lookup", `{}`)),
	)
}

// sentTo returns the raw JSON of the items m was sent on the run's turn,
// nil if it was not called then.
func sentTo(m *scripted.Model, run string, turn int) []string {
	var sent []string
	for _, c := range m.Calls() {
		if c.Run == run && c.Turn == turn {
			sent = sent[:0]
			for _, it := range c.Input.All() {
				sent = append(sent, string(it.Raw()))
			}
		}
	}
	return sent
}

type process struct {
	runner *pipeline.Runner
	agent  *pipeline.Agent
	cp     *checkpoint.Checkpointer
	model  *scripted.Model
	ss     session.Store
	states state.Store
}

func start(t *testing.T, b backend, opts ...checkpoint.Option) *process {
	return startWith(t, b, nil, opts...) // the history by reference: the default
}

func startWith(t *testing.T, b backend, popts []persistence.Option, opts ...checkpoint.Option) *process {
	ss, states := b.open(t)
	cp := checkpoint.New(states, append(opts[:len(opts):len(opts)], checkpoint.WithSession(ss, popts...))...)
	p := &process{cp: cp, model: chatModel(), ss: ss, states: states}
	p.runner = pipeline.NewRunner(pipeline.WithMiddleware(
		cp.Middleware(),
		approval.Require(approval.ByTool("transfer")),
	))
	tool := func(name string) pipeline.Tool {
		return pipeline.NewTool(pipeline.ToolSpec{Name: name, Description: name}, func(context.Context, json.RawMessage) (string, error) {
			return name + " ok", nil
		})
	}
	p.agent = &pipeline.Agent{Name: "chat", Model: p.model, Tools: []pipeline.Tool{tool("lookup"), tool("transfer")}}
	return p
}

func (p *process) message(t *testing.T, sid, runID, text string) *pipeline.Result {
	t.Helper()
	res, err := p.runner.Run(t.Context(), p.agent, pipeline.UserInput(text), pipeline.WithRunID(runID), pipeline.WithSessionID(sid))
	if err != nil {
		t.Fatalf("message %s: %v", runID, err)
	}
	return res
}

// approveResume loads the paused run runID, approves its call callID and
// resumes it in this process.
func (p *process) approveResume(t *testing.T, runID, callID string) error {
	t.Helper()
	run, err := p.states.Load(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Approve(callID); err != nil {
		t.Fatal(err)
	}
	_, err = p.runner.Resume(t.Context(), p.agent, run)
	return err
}

// TestCheckpointsReferToHistory: each run's checkpoint refers to the
// history its run started from instead of copying it, and a paused run
// resumed by another process gives the model exactly the input the live
// run would have, after the session went on.
func TestCheckpointsReferToHistory(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			sid := fmt.Sprintf("%s-%s", t.Name(), randomID(t))
			p := start(t, b)
			const messages = 12
			for i := range messages {
				runID := fmt.Sprintf("%s-r%d", sid, i)
				before, err := p.ss.List(t.Context(), sid, 0)
				if err != nil {
					t.Fatal(err)
				}
				res := p.message(t, sid, runID, fmt.Sprintf("message %d", i))
				if _, ok := res.State().FinalOutput(); !ok {
					t.Fatalf("message %d did not finish", i)
				}
				// The live run refers to what the session held before it.
				gotSID, n, pending, ok := res.State().HistoryRef()
				if len(before) == 0 { // nothing to refer to
					if ok {
						t.Fatalf("message %d: HistoryRef() of an empty history = %q, %d", i, gotSID, n)
					}
					continue
				}
				if !ok || pending || gotSID != sid || n != len(before) {
					t.Fatalf("message %d: HistoryRef() = %q, %d, pending %v, %v; want %q, %d", i, gotSID, n, pending, ok, sid, len(before))
				}
			}

			// A message that pauses on a transfer, then two more messages
			// while it waits.
			paused := sid + "-paused"
			res := p.message(t, sid, paused, "transfer")
			if !res.Interrupted() {
				t.Fatal("the transfer did not pause")
			}
			callID := res.Interruptions()[0].CallID
			want := sentTo(p.model, paused, 1)
			for i := range 2 {
				p.message(t, sid, fmt.Sprintf("%s-after%d", sid, i), "meanwhile")
			}

			// Another process loads the checkpoint, approves and resumes.
			q := start(t, b)
			run, err := q.states.Load(t.Context(), paused)
			if err != nil {
				t.Fatal(err)
			}
			// A store that keeps the session too reads the history at
			// Load; the memory checkpoint store leaves it to persistence.
			_, _, pending, _ := run.HistoryRef()
			if pending != (b.name == "memory") {
				t.Fatalf("loaded run: history pending = %v", pending)
			}
			if _, err := state.Marshal(run); (err == nil) != !pending {
				t.Fatalf("Marshal of the loaded run = %v (history pending %v)", err, pending)
			}
			if err := run.Approve(callID); err != nil {
				t.Fatal(err)
			}
			res, err = q.runner.Resume(t.Context(), q.agent, run)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if _, ok := res.State().FinalOutput(); !ok {
				t.Fatal("the resumed run did not finish")
			}
			got := sentTo(q.model, paused, 2)
			// The resumed turn's input is the paused one's plus what the
			// run recorded since (the transfer's call and output).
			if len(got) != len(want)+2 || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("resumed model input (%d items) does not extend the live one (%d items):\n%q\n%q", len(got), len(want), got, want)
			}
		})
	}
}

// TestResumeRefusesChangedHistory: a paused run whose session history was
// cleared behind its back fails to resume with a typed error, before any
// model call or tool, instead of giving the model another input.
func TestResumeRefusesChangedHistory(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			sid := fmt.Sprintf("%s-%s", t.Name(), randomID(t))
			p := start(t, b)
			p.message(t, sid, sid+"-r0", "hello")
			res := p.message(t, sid, sid+"-r1", "transfer")
			if !res.Interrupted() {
				t.Fatal("the transfer did not pause")
			}
			callID := res.Interruptions()[0].CallID
			if err := p.ss.Clear(t.Context(), sid); err != nil {
				t.Fatal(err)
			}
			q := start(t, b)
			run, err := q.states.Load(t.Context(), sid+"-r1")
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Approve(callID); err != nil {
				t.Fatal(err)
			}
			_, err = q.runner.Resume(t.Context(), q.agent, run)
			var he *state.HistoryError
			if !errors.Is(err, state.ErrHistoryChanged) || !errors.As(err, &he) || he.SessionID != sid {
				t.Fatalf("resume after Clear = %v, want a *state.HistoryError wrapping ErrHistoryChanged", err)
			}
			if sentTo(q.model, sid+"-r1", 2) != nil {
				t.Fatal("the model was called")
			}
		})
	}
}

// TestEarlierRunGoesOnWhileLaterPaused: a later run paused while an
// earlier run of its session goes on (its approval decided after the
// later run started) sorts the earlier run's new items before its own
// place; its checkpoint refers to its history by the session's write
// stamp, so another process resumes it with exactly the input the live
// run had, on every backend, as it does with the history copied
// (WithHistoryCopied).
func TestEarlierRunGoesOnWhileLaterPaused(t *testing.T) {
	for _, b := range backends(t) {
		for _, copied := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/copied=%v", b.name, copied), func(t *testing.T) {
				var popts []persistence.Option
				if copied {
					popts = append(popts, persistence.WithHistoryCopied())
				}
				sid := fmt.Sprintf("%s-%s", t.Name(), randomID(t))
				p := startWith(t, b, popts)
				p.message(t, sid, sid+"-r0", "hello")
				first := p.message(t, sid, sid+"-p1", "transfer")
				second := p.message(t, sid, sid+"-p2", "transfer")
				if !first.Interrupted() || !second.Interrupted() {
					t.Fatal("the transfers did not pause")
				}
				if _, _, _, ok := second.State().HistoryRef(); ok == copied {
					t.Fatalf("the later run refers to its history: %v, want %v", ok, !copied)
				}
				live := sentTo(p.model, sid+"-p2", 1)
				// Another process resumes each, the earlier run first.
				q := startWith(t, b, popts)
				if err := q.approveResume(t, sid+"-p1", first.Interruptions()[0].CallID); err != nil {
					t.Fatalf("resume of the earlier run: %v", err)
				}
				if err := q.approveResume(t, sid+"-p2", second.Interruptions()[0].CallID); err != nil {
					t.Fatalf("resume of the later run: %v", err)
				}
				// The resumed turn's input is the live one's plus the
				// transfer's call and output: the earlier run's new items,
				// which sort before the later run in the session, are not
				// in it.
				got := sentTo(q.model, sid+"-p2", 2)
				if len(got) != len(live)+2 || !slices.Equal(got[:len(live)], live) {
					t.Fatalf("resumed model input (%d items) does not extend the live one (%d items):\n%q\n%q", len(got), len(live), got, live)
				}
				items, err := p.ss.List(t.Context(), sid, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(items) != 4+4+4 {
					t.Fatalf("session holds %d items after both resumes, want 12", len(items))
				}
			})
		}
	}
}

// TestCheckpointStorageGrowsWithConversation: on SQLite, what the
// checkpoints of N messages store of their history grows with N, not with
// N × the conversation.
func TestCheckpointStorageGrowsWithConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conv.db")
	b := sqliteBackend(path)
	p := start(t, b)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	contextBytes := func() int64 {
		var n int64
		if err := db.QueryRow(`SELECT COALESCE(SUM(LENGTH(data)), 0) FROM run_checkpoint_contexts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var per []int64
	prev := contextBytes()
	for i := range 40 {
		p.message(t, "s", fmt.Sprintf("r%d", i), fmt.Sprintf("message %d", i))
		now := contextBytes()
		per = append(per, now-prev)
		prev = now
	}
	// Message 1 stores no history; the others a reference of a constant
	// size (its count's digits aside).
	if first, last := per[2], per[len(per)-1]; last > first+4 {
		t.Fatalf("history stored by message 3: %d bytes, by message 40: %d; want the same", first, last)
	}
}

// TestDeleteFinishedStoresTheConversation: with DeleteFinished, N
// finished messages leave their items in the session and no checkpoint,
// so what is stored is what persistence alone stores.
func TestDeleteFinishedStoresTheConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conv.db")
	b := sqliteBackend(path)
	p := start(t, b, checkpoint.WithRetention(checkpoint.DeleteFinished))
	for i := range 20 {
		p.message(t, "s", fmt.Sprintf("r%d", i), fmt.Sprintf("message %d", i))
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var heads, items, pieces int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM run_checkpoints), (SELECT count(*) FROM session_items),
		(SELECT count(*) FROM run_checkpoint_items) + (SELECT count(*) FROM run_checkpoint_contexts)`).Scan(&heads, &items, &pieces); err != nil {
		t.Fatal(err)
	}
	if heads != 0 || pieces != 0 || items != 20*4 {
		t.Fatalf("after 20 messages: %d checkpoints, %d checkpoint pieces, %d session items; want 0, 0, 80", heads, pieces, items)
	}
}

// randomID keeps sessions of earlier test runs on a shared server apart.
func randomID(*testing.T) string { return fmt.Sprintf("%x", time.Now().UnixNano()) }

// TestPopWhilePaused: popping a session while a run of it is paused
// leaves the run's history alone as long as the pops take the run's own
// items (or later runs'): the run resumes with exactly the input the live
// run had. A pop that reaches into its history makes the resume fail
// with a typed error before the model is called, never with another
// input.
func TestPopWhilePaused(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			sid := fmt.Sprintf("%s-%s", t.Name(), randomID(t))
			p := start(t, b)
			p.message(t, sid, sid+"-r0", "hello")
			res := p.message(t, sid, sid+"-p", "transfer")
			if !res.Interrupted() {
				t.Fatal("the transfer did not pause")
			}
			live := sentTo(p.model, sid+"-p", 1)
			pop := func(want string) {
				t.Helper()
				it, ok, err := p.ss.Pop(t.Context(), sid)
				if err != nil || !ok || it.Text() != want {
					t.Fatalf("Pop = %q, %v, %v; want %q", it.Text(), ok, err, want)
				}
			}
			pop("transfer") // the paused run's own input
			q := start(t, b)
			if err := q.approveResume(t, sid+"-p", res.Interruptions()[0].CallID); err != nil {
				t.Fatalf("resume after a pop of the run's own item: %v", err)
			}
			got := sentTo(q.model, sid+"-p", 2)
			if len(got) != len(live)+2 || !slices.Equal(got[:len(live)], live) {
				t.Fatalf("resumed model input (%d items) does not extend the live one (%d items):\n%q\n%q", len(got), len(live), got, live)
			}

			// A second paused run, and pops down into its history.
			res = p.message(t, sid, sid+"-p2", "transfer")
			if !res.Interrupted() {
				t.Fatal("the second transfer did not pause")
			}
			pop("transfer")
			pop("Done.") // the resumed run's reply
			err := q.approveResume(t, sid+"-p2", res.Interruptions()[0].CallID)
			var he *state.HistoryError
			if !errors.Is(err, state.ErrHistoryChanged) || !errors.As(err, &he) || he.SessionID != sid {
				t.Fatalf("resume after a pop into the history = %v, want a *state.HistoryError wrapping ErrHistoryChanged", err)
			}
			if sentTo(q.model, sid+"-p2", 2) != nil {
				t.Fatal("the model was called")
			}
		})
	}
}
