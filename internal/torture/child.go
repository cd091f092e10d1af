package torture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// EnvChild is the environment variable that makes a program a torture
// child: [ChildMain] reads its JSON configuration from it.
const EnvChild = "TURNKIT_TORTURE_CHILD"

// The child modes.
const (
	modeDrive = "drive" // drive a plan's runs to their end
	modeClaim = "claim" // approve one paused run and resume it at a signal
)

// childConfig is what a parent tells a child.
type childConfig struct {
	Mode     string  `json:"mode"`
	Backend  Backend `json:"backend"`
	Prefix   string  `json:"prefix"`
	Seed     uint64  `json:"seed"`
	Runs     int     `json:"runs"`
	Sessions int     `json:"sessions"`
	Conc     int     `json:"conc"`
	Recover  bool    `json:"recover"`
	// Hook and Nth arm a [Trap]; Hook "" arms none.
	Hook Hook `json:"hook,omitempty"`
	Nth  int  `json:"nth,omitempty"`
	// Retention is the checkpointer's retention: "" keeps every
	// checkpoint, [RetainDelete] and [RetainLast] prune finished runs,
	// which the child archives first (see [Archive]).
	Retention string `json:"retention,omitempty"`
	// Pops, if set, adds a [WithPops] pair of that kind to the plan.
	Pops string `json:"pops,omitempty"`
	// Tag names the child's connections to a database server (see
	// [Backend.settle]); "" leaves them unnamed.
	Tag string `json:"tag,omitempty"`
	// RunID is the run a claim child resumes.
	RunID string `json:"run_id,omitempty"`
	// Plan, if set, is the plan instead of the one Seed, Prefix, Runs and
	// Sessions make.
	Plan *Plan `json:"plan,omitempty"`
}

func (c childConfig) plan() Plan {
	if c.Plan != nil {
		return *c.Plan
	}
	p := NewPlan(c.Seed, c.Prefix, c.Runs, c.Sessions)
	if c.Pops != "" {
		p = WithPops(p, c.Prefix, c.Pops)
	}
	return p
}

// A Backend says where the stores and the effect log live: a SQLite file
// in Dir, or PostgreSQL at PostgresURL in schema Schema, or Redis at
// RedisURL under the key prefix Schema+":" (the effect log stays in Dir).
// At most one of PostgresURL and RedisURL may be set. With Sealed, items
// and checkpoints are encrypted at rest (session/encrypt), under a
// key-encryption key in a file in Dir that every process reads.
type Backend struct {
	Dir         string `json:"dir"`
	PostgresURL string `json:"postgres_url,omitempty"`
	RedisURL    string `json:"redis_url,omitempty"`
	Schema      string `json:"schema,omitempty"`
	Sealed      bool   `json:"sealed,omitempty"`
}

// Name returns "sqlite", "postgres" or "redis", with "+sealed" when
// Sealed.
func (b Backend) Name() string {
	name := "sqlite"
	switch {
	case b.PostgresURL != "":
		name = "postgres"
	case b.RedisURL != "":
		name = "redis"
	}
	if b.Sealed {
		name += "+sealed"
	}
	return name
}

// EffectLogPath returns the path of the effect log.
func (b Backend) EffectLogPath() string { return filepath.Join(b.Dir, "effects.log") }

// A sessionStateStore is a backend's store: sessions and checkpoints on
// one connection pool.
type sessionStateStore interface {
	session.Store
	state.Store
}

// Open opens the backend's store, which is both the session store and the
// checkpoint store.
// It creates Dir if needed.
func (b Backend) Open(ctx context.Context) (sessionStateStore, error) {
	if err := os.MkdirAll(b.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	var kr *encrypt.Keyring
	var m []state.MarshalOption
	var u []state.UnmarshalOption
	if b.Sealed {
		// The parent opens the store first, so the key file exists
		// before any child reads it.
		if err := encrypt.WriteKeyFile(b.Dir, "torture"); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("torture: %w", err)
		}
		p, err := encrypt.NewFileProvider(b.Dir, "torture")
		if err != nil {
			return nil, fmt.Errorf("torture: %w", err)
		}
		kr = encrypt.NewKeyring(p)
		m, u = kr.Codec()
	}
	var store encrypt.Backend
	var err error
	switch {
	case b.PostgresURL != "" && b.RedisURL != "":
		return nil, errors.New("torture: a backend with both a PostgreSQL and a Redis URL")
	case b.PostgresURL != "":
		store, err = postgres.Open(ctx, b.PostgresURL, postgres.WithSchema(b.Schema), postgres.WithCodec(m, u))
	case b.RedisURL != "":
		if b.Schema == "" {
			return nil, errors.New("torture: a Redis backend needs a Schema (its key prefix)")
		}
		store, err = redis.Open(ctx, b.RedisURL, redis.WithPrefix(b.Schema+":"), redis.WithCodec(m, u))
	default:
		store, err = sqlite.Open(filepath.Join(b.Dir, "torture.db"), sqlite.WithCodec(m, u))
	}
	switch {
	case err != nil:
		return nil, err
	case kr == nil:
		return store, nil
	}
	return encrypt.Wrap(store, kr), nil
}

// ChildMain runs the program as a torture child if [EnvChild] is set, and
// then exits; otherwise it returns at once. Call it first thing in main or
// TestMain of a program that [Torture], [Load] or [Claim] start.
func ChildMain() {
	raw := os.Getenv(EnvChild)
	if raw == "" {
		return
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "torture child: bad %s: %v\n", EnvChild, err)
		os.Exit(2)
	}
	if err := runChild(context.Background(), cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "torture child: %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func runChild(ctx context.Context, cfg childConfig, in io.Reader, out io.Writer) error {
	backend, err := cfg.Backend.tagged(cfg.Tag)
	if err != nil {
		return err
	}
	store, err := backend.Open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	log, err := OpenEffectLog(cfg.Backend.EffectLogPath())
	if err != nil {
		return err
	}
	defer log.Close()
	var hooks Hooks
	if cfg.Hook != "" {
		hooks = &Trap{Hook: cfg.Hook, Nth: cfg.Nth, W: out}
	}
	archive, err := OpenArchive(cfg.Backend.ArchivePath())
	if err != nil {
		return err
	}
	defer archive.Close()
	plan := cfg.plan()
	stack := NewStack(plan, store, store, log, hooks, WithArchive(archive), WithRetention(retention(cfg.Retention)))
	switch cfg.Mode {
	case modeDrive:
		w := &Worker{Stack: stack, Plan: plan, Concurrency: cfg.Conc, Recover: cfg.Recover}
		err := w.Drive(ctx)
		stats, _ := json.Marshal(w.Stats())
		fmt.Fprintf(out, "stats %s\n", stats)
		return err
	case modeClaim:
		return claim(ctx, stack, cfg.RunID, in, out)
	}
	return fmt.Errorf("unknown mode %q", cfg.Mode)
}

// The retentions a child may run with (see childConfig.Retention).
const (
	RetainDelete = "delete"    // [checkpoint.DeleteFinished]
	RetainLast   = "keep-last" // [checkpoint.KeepLast](1)
)

func retention(name string) checkpoint.Retention {
	switch name {
	case RetainDelete:
		return checkpoint.DeleteFinished
	case RetainLast:
		return checkpoint.KeepLast(1)
	}
	return checkpoint.KeepAll
}

// claim loads a paused run, approves its pending calls, says "ready", and
// at the next line of input resumes it, then says "result ok", "result
// conflict" or "result error: ...".
func claim(ctx context.Context, st *Stack, runID string, in io.Reader, out io.Writer) error {
	run, err := st.States.Load(ctx, runID)
	if err != nil {
		return err
	}
	for _, a := range run.Pending() {
		if err := run.Approve(a.CallID); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for the signal: %w", err)
	}
	_, err = approval.Resume(ctx, st.States, st.Runner, st.Agent, run)
	switch {
	case err == nil:
		fmt.Fprintln(out, "result ok")
	case errors.Is(err, state.ErrConflict):
		fmt.Fprintln(out, "result conflict")
	default:
		fmt.Fprintln(out, "result error: "+strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return nil
}
