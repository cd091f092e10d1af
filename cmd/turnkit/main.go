// Command turnkit shows and steers what turnkit stores: sessions, a
// session's items, runs, the calls waiting for approval; it approves or
// rejects them, verifies checkpoints' signatures, and serves the web
// inspector (package inspect).
//
//	turnkit -db agent.db sessions [-q PREFIX] [-cursor C] [-limit N]
//	turnkit -db agent.db show SESSION [-cursor C] [-limit N]
//	turnkit -db agent.db runs [-status paused|unfinished|finished] [-session ID] [-cursor C]
//	turnkit -db agent.db run RUN
//	turnkit -db agent.db pending
//	turnkit -db agent.db -write approve RUN CALL
//	turnkit -db agent.db -write reject RUN CALL -reason TEXT
//	turnkit -db agent.db verify CHECKPOINT -key ID=HEX
//	turnkit -db agent.db serve [-addr 127.0.0.1:8080] [-write -token SECRET] [-key ID=HEX] [-trace URL]
//
// -db is a SQLite file (a path, or sqlite:PATH), a PostgreSQL URL
// (postgres://…) or a Redis URL (redis://…); $TURNKIT_DB is the default.
// -sign ID=HEX signs the checkpoints a decision saves, for deployments
// that sign theirs.
//
// run shows one run: its status, agent, turn, session and version, its
// usage, and each model call it made (turn, agent, model, the provider's
// response ID and the call's usage).
//
// -keys DIR opens a store sealed with session/encrypt: DIR holds the
// key-encryption keys as encrypt.FileProvider reads them (<id>.key, 32
// bytes in base64), and -kek ID names the one that wraps new data keys
// (by default the only key in DIR). $TURNKIT_KEYS and $TURNKIT_KEK are
// their defaults. Every command then reads and writes the store through
// encrypt.Wrap, with the keyring's codec on its checkpoints.
//
// Nothing changes a run without -write. approve and reject record the
// decision on the checkpoint (compare-and-swap on its version) and leave
// resuming it to the application's workers; serve with -write asks for
// the token (HTTP basic auth, any user name) on every page and write.
// verify reads CHECKPOINT as a checkpoint file if one exists at that
// path, and as a run ID in the store otherwise.
package main

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "turnkit:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errUsage marks a command line that is not one the command takes.
var errUsage = errors.New("usage")

// store is what every backend is: sessions and checkpoints on one
// connection.
type store interface {
	session.Store
	state.Store
}

// open opens the store db names, with the checkpoint codec opts, and
// sealed under kr unless kr is nil.
func open(ctx context.Context, db string, m []state.MarshalOption, u []state.UnmarshalOption, kr *encrypt.Keyring) (store, error) {
	if kr != nil {
		km, ku := kr.Codec()
		m, u = append(km, m...), append(ku, u...)
	}
	var (
		b   encrypt.Backend
		err error
	)
	switch {
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		b, err = postgres.Open(ctx, db, postgres.WithCodec(m, u))
	case strings.HasPrefix(db, "redis://"), strings.HasPrefix(db, "rediss://"):
		b, err = redis.Open(ctx, db, redis.WithCodec(m, u))
	case db == "":
		return nil, fmt.Errorf("%w: no store: give -db or set TURNKIT_DB", errUsage)
	default:
		b, err = sqlite.Open(strings.TrimPrefix(db, "sqlite:"), sqlite.WithCodec(m, u))
	}
	if err != nil || kr == nil {
		return b, err
	}
	return encrypt.Wrap(b, kr), nil
}

// keyring returns the keyring over the key files in dir, wrapping under
// the key named kek (the only key in dir if kek is ""), or nil if dir is
// "".
func keyring(dir, kek string) (*encrypt.Keyring, error) {
	if dir == "" {
		return nil, nil
	}
	if kek == "" {
		names, err := filepath.Glob(filepath.Join(dir, "*.key"))
		if err != nil || len(names) != 1 {
			return nil, fmt.Errorf("%w: -keys %s holds %d key files: name the current one with -kek", errUsage, dir, len(names))
		}
		kek = strings.TrimSuffix(filepath.Base(names[0]), ".key")
	}
	p, err := encrypt.NewFileProvider(dir, kek)
	if err != nil {
		return nil, err
	}
	return encrypt.NewKeyring(p), nil
}

// keysFlag collects -key ID=HEX flags.
type keysFlag map[string][]byte

func (k keysFlag) String() string { return fmt.Sprint(len(k), " keys") }

func (k keysFlag) Set(v string) error {
	id, h, ok := strings.Cut(v, "=")
	key, err := hex.DecodeString(h)
	if !ok || id == "" || err != nil || len(key) == 0 {
		return errors.New("want ID=HEX, the key's ID and the key in hex")
	}
	k[id] = key
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("turnkit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", os.Getenv("TURNKIT_DB"), "the store: a SQLite file, a postgres:// or a redis:// URL")
	write := fs.Bool("write", false, "allow commands that change runs (approve, reject, serve's decisions)")
	sign := keysFlag{}
	fs.Var(sign, "sign", "with -write, the key that signs the checkpoints a decision saves, ID=HEX")
	keyDir := fs.String("keys", os.Getenv("TURNKIT_KEYS"), "a directory of key-encryption key files (<id>.key): the store is sealed with session/encrypt")
	kek := fs.String("kek", os.Getenv("TURNKIT_KEK"), "with -keys, the key that wraps new data keys (default: the only key file)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: a command: sessions, show, runs, run, pending, approve, reject, verify or serve", errUsage)
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	sub := flag.NewFlagSet(cmd, flag.ContinueOnError)
	sub.SetOutput(stderr)
	limit := sub.Int("limit", 50, "the page size")
	cursor := sub.String("cursor", "", "the cursor of the page to show (printed after a page)")
	prefix, status, sessionID, reason := new(string), new(string), new(string), new(string)
	addr, token, trace := new(string), new(string), new(string)
	keys := keysFlag{}
	switch cmd {
	case "sessions":
		prefix = sub.String("q", "", "list only the sessions whose ID starts with this")
	case "runs":
		status = sub.String("status", "", "paused, unfinished or finished")
		sessionID = sub.String("session", "", "list only this session's runs")
	case "reject":
		reason = sub.String("reason", "", "the message the model gets instead of the tool's output")
	case "verify":
		sub.Var(keys, "key", "a key that verifies signatures, ID=HEX (repeatable)")
	case "serve":
		addr = sub.String("addr", "127.0.0.1:8080", "the address to listen on")
		token = sub.String("token", "", "with -write, the password every request must give (HTTP basic auth)")
		trace = sub.String("trace", "", "the trace link template, with {trace_id}")
		sub.Var(keys, "key", "a key that verifies signatures, ID=HEX (repeatable)")
	case "show", "run", "pending", "approve":
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	// Positional arguments first, then the command's flags.
	var pos []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if err := sub.Parse(rest); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	pos = append(pos, sub.Args()...)
	need := map[string]int{"show": 1, "run": 1, "approve": 2, "reject": 2, "verify": 1}[cmd]
	if len(pos) != need {
		return fmt.Errorf("%w: %s takes %d arguments, got %d", errUsage, cmd, need, len(pos))
	}
	if (cmd == "approve" || cmd == "reject") && !*write {
		return fmt.Errorf("%s changes run %s: give -write to allow it", cmd, pos[0])
	}
	if cmd == "serve" && *write && *token == "" {
		return fmt.Errorf("%w: serve -write needs -token, the password that authorizes writes", errUsage)
	}
	if cmd == "verify" && len(keys) == 0 {
		return fmt.Errorf("%w: verify needs -key ID=HEX", errUsage)
	}
	if cmd == "verify" {
		if data, err := os.ReadFile(pos[0]); err == nil {
			return verifyFile(stdout, pos[0], data, keys)
		}
	}
	var (
		m []state.MarshalOption
		u []state.UnmarshalOption
	)
	if cmd == "verify" {
		u = []state.UnmarshalOption{state.WithVerifyKeys(keys)}
	}
	for id, k := range sign {
		m = append(m, state.WithSigningKey(id, k))
	}
	kr, err := keyring(*keyDir, *kek)
	if err != nil {
		return err
	}
	s, err := open(ctx, *db, m, u, kr)
	if err != nil {
		return err
	}
	defer s.Close()
	switch cmd {
	case "sessions":
		return listSessions(ctx, stdout, s, session.SessionQuery{Prefix: *prefix, Cursor: *cursor, Limit: *limit})
	case "show":
		return show(ctx, stdout, s, pos[0], session.PageQuery{Cursor: *cursor, Limit: *limit})
	case "run":
		return showRun(ctx, stdout, s, pos[0])
	case "runs", "pending":
		q := state.RunQuery{Cursor: *cursor, Limit: *limit}
		if cmd == "pending" {
			q.Status = state.RunPaused
		} else {
			q.SessionID = *sessionID
			if *status != "" {
				st, ok := state.ParseRunStatus(*status)
				if !ok {
					return fmt.Errorf("%w: unknown status %q", errUsage, *status)
				}
				q.Status = st
			}
		}
		return listRuns(ctx, stdout, s, q, cmd == "pending")
	case "approve", "reject":
		return decide(ctx, stdout, s, cmd, pos[0], pos[1], *reason)
	case "verify":
		if _, err := s.Load(ctx, pos[0]); err != nil {
			return fmt.Errorf("run %s does not verify: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "run %s: signature verified\n", pos[0])
		return nil
	}
	return serve(ctx, stdout, s, *db, kr, *addr, *write, *token, *trace, keys)
}

func listSessions(ctx context.Context, w io.Writer, s store, q session.SessionQuery) error {
	l, ok := s.(session.Lister)
	if !ok {
		return fmt.Errorf("this store does not list sessions; show one by its ID")
	}
	page, err := l.ListSessions(ctx, q)
	if err != nil {
		return err
	}
	for _, id := range page.IDs {
		fmt.Fprintln(w, id)
	}
	if page.Next != "" {
		fmt.Fprintf(w, "next page: -cursor %s\n", page.Next)
	}
	return nil
}

func show(ctx context.Context, w io.Writer, s store, id string, q session.PageQuery) error {
	var entries []session.Entry
	next := ""
	if p, ok := s.(session.Pager); ok {
		page, err := p.ListPage(ctx, id, q)
		if err != nil {
			return err
		}
		entries, next = page.Entries, page.Next
	} else {
		items, err := s.List(ctx, id, q.PageSize())
		if err != nil {
			return err
		}
		for _, it := range items {
			entries = append(entries, session.Entry{Item: it})
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSEQ\tKIND\tNAME\tCALL\tTEXT")
	for _, e := range entries {
		it := e.Item
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.RunID, it.Seq(), it.Kind(), it.Name(), it.CallID(), oneLine(it.Text()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "older items: -cursor %s\n", next)
	}
	return nil
}

// oneLine shortens s to one line of at most 100 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

// showRun prints a run's summary, its usage, and the model calls it made
// with each call's usage.
func showRun(ctx context.Context, w io.Writer, s store, runID string) error {
	run, err := s.Load(ctx, runID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: %s, agent %s, turn %d, session %q, version %d\n",
		run.ID(), run.Status(), run.Agent(), run.Turn(), run.SessionID(), run.Version())
	if out, ok := run.FinalOutput(); ok {
		fmt.Fprintf(w, "final output: %s\n", oneLine(out))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tAGENT\tMODEL\tRESPONSE\tREQUESTS\tINPUT\tCACHED\tOUTPUT\tREASONING")
	usage := func(u state.Usage) string {
		return fmt.Sprintf("%d\t%d\t%d\t%d\t%d", u.Requests, u.InputTokens, u.CachedTokens, u.OutputTokens, u.ReasoningTokens)
	}
	for _, c := range run.ModelCalls() {
		model := c.Model
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Turn, c.Agent, model, c.ResponseID, usage(c.Usage))
	}
	fmt.Fprintf(tw, "total\t\t\t\t%s\n", usage(run.Usage()))
	return tw.Flush()
}

func listRuns(ctx context.Context, w io.Writer, s store, q state.RunQuery, calls bool) error {
	l, ok := s.(state.Lister)
	if !ok {
		return fmt.Errorf("this store does not list runs")
	}
	page, err := l.ListRuns(ctx, q)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if calls {
		fmt.Fprintln(tw, "RUN\tCALL\tTOOL\tARGUMENTS\tDECIDED\tSESSION")
	} else {
		fmt.Fprintln(tw, "RUN\tSTATUS\tPENDING\tAGENT\tTURN\tSESSION\tVERSION")
	}
	for _, r := range page.Runs {
		if !calls {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%d\n", r.RunID, r.Status, r.Pending, r.Agent, r.Turn, r.SessionID, r.Version)
			continue
		}
		run, err := s.Load(ctx, r.RunID)
		if err != nil {
			return err
		}
		for _, a := range run.Pending() {
			decided, args := "-", oneLine(a.Arguments)
			if d, ok := run.DecisionOn(a); ok {
				decided = d.Verdict.String()
				if a.IsElicitation() {
					decided = d.Answer.Action.String()
				}
			}
			if a.IsElicitation() {
				// The call waits for an answer to its server's request.
				args += fmt.Sprintf(" · %s asks %s", a.Elicitation.Server, oneLine(strconv.Quote(a.Elicitation.Message)))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, a.CallID, a.Tool, args, decided, r.SessionID)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(w, "next page: -cursor %s\n", page.Next)
	}
	return nil
}

// decide records a decision on a pending call and saves the checkpoint
// with compare-and-swap: of two deciders, one wins.
func decide(ctx context.Context, w io.Writer, s store, verdict, runID, callID, reason string) error {
	run, err := s.Load(ctx, runID)
	if err != nil {
		return err
	}
	if verdict == "approve" {
		err = run.Approve(callID)
	} else {
		err = run.Reject(callID, reason)
	}
	if err == nil {
		err = s.Save(ctx, run)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: call %s %sd; a worker that resumes the run goes on\n", runID, callID, verdict)
	return nil
}

// verifyFile checks the signature of a checkpoint file.
func verifyFile(w io.Writer, path string, data []byte, keys keysFlag) error {
	run, err := state.Unmarshal(data, state.WithVerifyKeys(keys))
	if err != nil {
		return fmt.Errorf("%s does not verify: %w", path, err)
	}
	fmt.Fprintf(w, "%s (run %s): signature verified\n", path, run.ID())
	return nil
}

// serve serves the web inspector until ctx is done.
func serve(ctx context.Context, w io.Writer, s store, db string, kr *encrypt.Keyring, addr string, write bool, token, trace string, keys keysFlag) error {
	opts := []inspect.Option{inspect.WithTraceURL(trace)}
	if len(keys) > 0 {
		v, err := open(ctx, db, nil, []state.UnmarshalOption{state.WithVerifyKeys(keys)}, kr)
		if err != nil {
			return err
		}
		defer v.Close()
		opts = append(opts, inspect.WithVerifyStore(v))
	}
	authorized := func(r *http.Request) bool {
		_, pass, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(pass), []byte(token)) == 1
	}
	if write {
		opts = append(opts, inspect.WithWrites(
			func(r *http.Request) error {
				if !authorized(r) {
					return errors.New("wrong or missing token")
				}
				return nil
			},
			func(ctx context.Context, run *state.Run) error { return s.Save(ctx, run) }))
	}
	var h http.Handler = inspect.New(s, s, opts...)
	if write {
		inner := h
		h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if !authorized(r) {
				rw.Header().Set("WWW-Authenticate", `Basic realm="turnkit"`)
				http.Error(rw, "turnkit: the token is needed (any user name)", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(rw, r)
		})
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(w, "serving the inspector on http://%s/ (writes %s)\n", addr, map[bool]string{true: "enabled", false: "disabled"}[write])
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
