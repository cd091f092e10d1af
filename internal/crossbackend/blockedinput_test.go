package crossbackend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

const card = "4111 1111 1111 1111"

var cardNumber = regexp.MustCompile(`\b(?:\d[ -]?){13,16}\b`)

// noCards trips on a card number in any item it is given.
func noCards(ctx context.Context, _ *pipeline.Agent, items []state.Item) (guardrails.Verdict, error) {
	for _, it := range items {
		if cardNumber.MatchString(it.Text()) {
			return guardrails.Trip("card number"), nil
		}
	}
	return guardrails.Pass(nil), nil
}

// redactCards stores the input with card numbers masked.
func redactCards(ctx context.Context, in []state.Item) ([]state.Item, error) {
	out := make([]state.Item, len(in))
	for i, it := range in {
		out[i] = state.UserMessage(cardNumber.ReplaceAllString(it.Text(), "[card]"))
	}
	return out, nil
}

// backend is a session store under test; file is the SQLite database's
// path ("" for the others), whose bytes are searched.
type backend struct {
	store session.Store
	file  string
}

func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("memory", func(t *testing.T) { t.Parallel(); f(t, backend{store: memory.New()}) })
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "session.db")
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		f(t, backend{store: s, file: path})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		s, err := postgres.Open(context.Background(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		f(t, backend{store: s})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		s, err := redis.Open(context.Background(), testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		f(t, backend{store: s})
	})
}

func freshSession(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// sessionTexts returns the texts of the session's items.
func sessionTexts(t *testing.T, s session.Store, sid string) []string {
	t.Helper()
	items, err := s.List(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Text()
	}
	return out
}

// fileHolds reports whether the SQLite database (its main file, WAL and
// shared memory) holds s anywhere in its bytes.
func fileHolds(t *testing.T, path, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return false
}

// TestBlockedInputBackends runs a conversation whose second message holds
// a card number that an input guardrail blocks, with each blocked-input
// option, on every session backend: by default the message is stored (as
// documented); with DropBlockedInput it is not, nor is it after a resume
// is tried, nor sent to the model on the next message; with
// RedactBlockedInput its redacted form takes its place. For SQLite the
// number is looked for in the database file's bytes.
func TestBlockedInputBackends(t *testing.T) {
	drop, redact := guardrails.DropBlockedInput(), guardrails.RedactBlockedInput(redactCards)
	hist, parallel := guardrails.WithHistory(), guardrails.WithParallel()
	cases := []struct {
		name   string
		opts   []guardrails.Option
		stored string // the blocked message as the session keeps it; "" for none
	}{
		{"default", nil, "my card is " + card},
		{"drop", []guardrails.Option{drop}, ""},
		{"drop parallel", []guardrails.Option{drop, parallel}, ""},
		{"redact", []guardrails.Option{redact}, "my card is [card]"},
		// With the history the checks run on the first turn, after the
		// input was placed: the ruling takes it out of the run's state
		// again, before any save.
		{"drop history", []guardrails.Option{drop, hist}, ""},
		{"drop history parallel", []guardrails.Option{drop, hist, parallel}, ""},
		{"redact history", []guardrails.Option{redact, hist}, "my card is [card]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) { // a database file of its own
				ctx := context.Background()
				sid := freshSession("blocked")
				opts := tc.opts
				// Every option keeps the blocked input out of the run's
				// state and checkpoints, with the history too.
				ruledFirst := len(opts) > 0
				m := scripted.Rules(scripted.On(scripted.Any(), scripted.Reply("Hi.")))
				agent := &pipeline.Agent{Name: "assistant", Model: m}
				// The crash-safe chain where the backend keeps checkpoints
				// too: the checkpoints must not hold the number either.
				mws := []pipeline.Middleware{persistence.Middleware(b.store), guardrails.Input(noCards, opts...)}
				ckpts, crashSafe := b.store.(state.Store)
				if crashSafe {
					cp := checkpoint.New(ckpts, checkpoint.WithSession(b.store))
					mws = []pipeline.Middleware{cp.Middleware(), guardrails.Input(noCards, opts...)}
				}
				r := pipeline.NewRunner(pipeline.WithMiddleware(mws...))
				if _, err := r.Run(ctx, agent, pipeline.UserInput("hello"), pipeline.WithSessionID(sid)); err != nil {
					t.Fatal(err)
				}
				blocked := sid + "-2"
				_, err := r.Run(ctx, agent, pipeline.UserInput("my card is "+card), pipeline.WithSessionID(sid), pipeline.WithRunID(blocked))
				if !errors.Is(err, guardrails.ErrTripwire) {
					t.Fatalf("blocked run: %v, want a tripwire", err)
				}
				if crashSafe && ruledFirst {
					saved, err := ckpts.Load(ctx, blocked)
					if err != nil {
						t.Fatal(err)
					}
					data, err := state.Marshal(saved)
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(data), card) {
						t.Errorf("the blocked run's checkpoint holds the card number")
					}
				}
				// A resume of the blocked run is refused, and stores nothing more.
				st, _ := pipeline.StateOf(err)
				if data, err := state.Marshal(st); err != nil || (ruledFirst && strings.Contains(string(data), card)) {
					t.Errorf("the blocked run's state holds the card number (%v)", err)
				}
				if _, err := r.Resume(ctx, agent, st); !errors.Is(err, guardrails.ErrTripwire) {
					t.Errorf("resume of the blocked run: %v, want the tripwire again", err)
				}
				want := []string{"hello", "Hi."}
				if tc.stored != "" {
					want = append(want, tc.stored)
				}
				if got := sessionTexts(t, b.store, sid); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("session holds %q, want %q", got, want)
				}
				if _, err := r.Run(ctx, agent, pipeline.UserInput("thanks"), pipeline.WithSessionID(sid)); err != nil {
					t.Fatal(err)
				}
				calls := m.Calls()
				last := calls[len(calls)-1].Input
				var seen []string
				for _, it := range last.All() {
					seen = append(seen, it.Text())
				}
				if got, want := strings.Join(seen, "|"), strings.Join(append(want, "thanks"), "|"); got != want {
					t.Errorf("the next message's model input is %q, want %q", got, want)
				}
				if b.file != "" && (ruledFirst || tc.opts == nil) {
					if held, want := fileHolds(t, b.file, card), tc.opts == nil; held != want {
						t.Errorf("the SQLite file %s holds the blocked card number: %v, want %v", b.file, held, want)
					}
				}
			})
		})
	}
}

// TestInputGuardrailHistory: with WithHistory an input guardrail sees the
// session's history before the input, so a card number an earlier message
// left in the conversation stops the next run; without it only the new
// input is checked and the run goes on.
func TestInputGuardrailHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		sid := freshSession("history")
		agent := &pipeline.Agent{Name: "assistant", Model: scripted.Rules(scripted.On(scripted.Any(), scripted.Reply("Hi.")))}
		plain := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(b.store)))
		if _, err := plain.Run(ctx, agent, pipeline.UserInput("my card is "+card), pipeline.WithSessionID(sid)); err != nil {
			t.Fatal(err)
		}
		inputOnly := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(b.store), guardrails.Input(noCards)))
		if _, err := inputOnly.Run(ctx, agent, pipeline.UserInput("hello"), pipeline.WithSessionID(sid)); err != nil {
			t.Fatalf("without WithHistory: %v, want the run to go on", err)
		}
		withHistory := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(b.store),
			guardrails.Input(noCards, guardrails.WithHistory(), guardrails.DropBlockedInput())))
		_, err := withHistory.Run(ctx, agent, pipeline.UserInput("hello again"), pipeline.WithSessionID(sid))
		if !errors.Is(err, guardrails.ErrTripwire) {
			t.Fatalf("with WithHistory: %v, want a tripwire on the history's card number", err)
		}
		if got := sessionTexts(t, b.store, sid); strings.Contains(strings.Join(got, "|"), "hello again") {
			t.Errorf("session holds %q: the blocked input was stored", got)
		}
	})
}
