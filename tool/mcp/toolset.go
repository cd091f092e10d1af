package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
)

// refreshTimeout bounds a background refresh after list_changed.
const refreshTimeout = 30 * time.Second

// A Toolset is a set of connected MCP servers and their tools. It is safe
// for concurrent use. Close it to stop the servers it started.
type Toolset struct {
	cfg   config
	conns []*conn

	mu    sync.Mutex        // serialises refreshes; guards lists and tools
	lists [][]*sdk.Tool     // each server's last good list
	tools map[toolKey]*Tool // every tool ever handed out, by server and MCP name
	snap  atomic.Pointer[[]*Tool]

	dirty  []atomic.Bool // servers that sent list_changed
	kick   chan struct{}
	ctx    context.Context // ends at Close; background refreshes run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

type toolKey struct {
	server int
	name   string
}

// Connect connects to servers (concurrently), lists their tools and
// returns the toolset. It fails with a [*ConfigError] for a server that is
// configured wrongly or two servers with one name, a [*DuplicateToolError]
// for two tools that would share a name, or an [*Error] for a server that
// cannot be reached or listed; nothing is left running then. ctx bounds
// connecting and listing, not the servers' lives.
func Connect(ctx context.Context, servers []Server, opts ...Option) (*Toolset, error) {
	ts := &Toolset{
		cfg:   newConfig(opts),
		conns: make([]*conn, len(servers)),
		lists: make([][]*sdk.Tool, len(servers)),
		tools: map[toolKey]*Tool{},
		dirty: make([]atomic.Bool, len(servers)),
		kick:  make(chan struct{}, 1),
	}
	names := map[string]int{}
	for i := range servers {
		s := servers[i] // a copy: later edits of the caller's slice change nothing
		s.Allow, s.Deny = slices.Clone(s.Allow), slices.Clone(s.Deny)
		if err := s.validate(i); err != nil {
			return nil, err
		}
		if j, dup := names[s.Name]; dup {
			return nil, &ConfigError{Server: s.Name, Index: i, Reason: fmt.Sprintf("name already used by server #%d", j)}
		}
		names[s.Name] = i
		ts.conns[i] = newConn(&s, &ts.cfg, func() { ts.changed(i) })
	}
	ts.ctx, ts.cancel = context.WithCancel(context.WithoutCancel(ctx))

	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, c := range ts.conns {
		wg.Go(func() {
			if err := c.connect(ctx); err != nil {
				errs[i] = err
				return
			}
			ts.lists[i], errs[i] = c.listTools(ctx)
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = ts.commit(ts.lists)
	}
	if err != nil {
		_ = ts.Close()
		return nil, err
	}
	ts.wg.Go(ts.refresher)
	return ts, nil
}

// Tools returns the toolset's tools in server order, each server's in the
// order it listed them, kept by every filter given (none: all). The tools
// are safe for concurrent use and stay valid until Close; a tool the
// server dropped since fails when called.
func (ts *Toolset) Tools(filters ...Filter) []pipeline.Tool {
	snap := *ts.snap.Load()
	out := make([]pipeline.Tool, 0, len(snap))
	for _, t := range snap {
		if t.keptBy(filters) {
			out = append(out, t)
		}
	}
	return out
}

// Refresh lists every server's tools again and replaces the toolset's
// tools with the result. On an error the previous tools stay.
func (ts *Toolset) Refresh(ctx context.Context) error {
	lists := make([][]*sdk.Tool, len(ts.conns))
	for i, c := range ts.conns {
		l, err := c.listTools(ctx)
		if err != nil {
			return err
		}
		lists[i] = l
	}
	ts.mu.Lock()
	err := ts.commitLocked(lists)
	ts.mu.Unlock()
	if err != nil {
		return err
	}
	ts.notifyChanged()
	return nil
}

// Close stops the background refreshes and the servers the toolset
// started, and closes the sessions it opened; a caller-owned session stays
// open. It waits for stdio servers to exit. Calls after Close fail with
// [ErrTransport]. Close is idempotent.
func (ts *Toolset) Close() error {
	var err error
	ts.once.Do(func() {
		if ts.cancel != nil {
			ts.cancel()
		}
		ts.wg.Wait()
		errs := make([]error, len(ts.conns))
		for i, c := range ts.conns {
			if c != nil {
				errs[i] = c.close()
			}
		}
		err = errors.Join(errs...)
	})
	return err
}

// changed marks server i's list stale and wakes the refresher. It is the
// SDK's list_changed handler, so it must not block.
func (ts *Toolset) changed(i int) {
	ts.dirty[i].Store(true)
	select {
	case ts.kick <- struct{}{}:
	default:
	}
}

// refresher lists the servers that sent list_changed again, until Close.
func (ts *Toolset) refresher() {
	for {
		select {
		case <-ts.ctx.Done():
			return
		case <-ts.kick:
		}
		for i := range ts.conns {
			if !ts.dirty[i].Swap(false) {
				continue
			}
			if err := ts.refreshServer(i); err != nil && ts.ctx.Err() == nil && ts.cfg.onErr != nil {
				ts.cfg.onErr(err)
			}
		}
	}
}

func (ts *Toolset) refreshServer(i int) error {
	ctx, cancel := context.WithTimeout(ts.ctx, refreshTimeout)
	defer cancel()
	l, err := ts.conns[i].listTools(ctx)
	if err != nil {
		return err
	}
	ts.mu.Lock()
	lists := slices.Clone(ts.lists)
	lists[i] = l
	err = ts.commitLocked(lists)
	ts.mu.Unlock()
	if err != nil {
		return err
	}
	ts.notifyChanged()
	return nil
}

func (ts *Toolset) commit(lists [][]*sdk.Tool) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.commitLocked(lists)
}

// commitLocked builds the tools from lists and publishes them, or changes
// nothing and returns the error.
func (ts *Toolset) commitLocked(lists [][]*sdk.Tool) error {
	type entry struct {
		key  toolKey
		spec pipeline.ToolSpec
		mt   *sdk.Tool
	}
	var entries []entry
	owner := map[string]toolKey{}
	for i, list := range lists {
		srv := ts.conns[i].srv
		for _, mt := range list {
			if mt == nil || !srv.keeps(mt.Name) {
				continue
			}
			name := mt.Name
			if ts.cfg.prefix {
				name = srv.Name + "_" + name
			}
			name = modelName(name)
			if name == "" || len(name) > 64 {
				return &ConfigError{Server: srv.Name, Index: i, Reason: fmt.Sprintf("tool %q cannot be offered to the model as %q (1 to 64 characters); deny it", mt.Name, name)}
			}
			key := toolKey{server: i, name: mt.Name}
			if prev, dup := owner[name]; dup {
				return &DuplicateToolError{
					Name:    name,
					Servers: [2]string{ts.conns[prev.server].srv.Name, srv.Name},
					Tools:   [2]string{prev.name, mt.Name},
				}
			}
			owner[name] = key
			params, strict, err := inputSchema(mt.InputSchema)
			if err != nil {
				return &Error{Server: srv.Name, Op: "list tools", Tool: mt.Name, kind: ErrProtocol, Err: err}
			}
			entries = append(entries, entry{key: key, mt: mt, spec: pipeline.ToolSpec{
				Name: name, Description: description(mt), Parameters: params, Strict: strict,
			}})
		}
	}
	snap := make([]*Tool, len(entries))
	for j, e := range entries {
		t := ts.tools[e.key]
		if t == nil {
			srv := ts.conns[e.key.server].srv
			t = &Tool{conn: ts.conns[e.key.server], server: srv.Name, name: e.key.name, approval: srv.NeedsApproval, textOnly: ts.cfg.text}
			ts.tools[e.key] = t
		}
		spec := e.spec
		t.spec.Store(&spec)
		a := e.mt.Annotations
		t.resend.Store(a != nil && (a.ReadOnlyHint || a.IdempotentHint))
		snap[j] = t
	}
	ts.snap.Store(&snap)
	copy(ts.lists, lists)
	return nil
}

// notifyChanged tells WithToolsChanged's function, outside the lock.
func (ts *Toolset) notifyChanged() {
	if ts.cfg.changed != nil {
		ts.cfg.changed()
	}
}

// description is the tool's description, or its title when it has none.
func description(t *sdk.Tool) string {
	if t.Description != "" {
		return t.Description
	}
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil {
		return t.Annotations.Title
	}
	return ""
}

// modelName replaces the characters the model API refuses in a tool name
// by '_'.
func modelName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// A Filter says whether an agent gets a tool; see [Toolset.Tools].
type Filter func(server, name string) bool

// Allow keeps the tools whose model-facing name matches one of the
// [path.Match] patterns.
func Allow(patterns ...string) Filter {
	patterns = slices.Clone(patterns)
	return func(_, name string) bool { return matchAny(patterns, name) }
}

// Deny drops the tools whose model-facing name matches one of the
// [path.Match] patterns.
func Deny(patterns ...string) Filter {
	patterns = slices.Clone(patterns)
	return func(_, name string) bool { return !matchAny(patterns, name) }
}

// OnServers keeps the tools of the named servers.
func OnServers(names ...string) Filter {
	names = slices.Clone(names)
	return func(server, _ string) bool { return slices.Contains(names, server) }
}

// inputSchema returns the schema the model sees, as the server gave it,
// and whether it qualifies for strict mode.
func inputSchema(s any) (json.RawMessage, bool, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), false, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false, fmt.Errorf("input schema: %w", err)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("input schema is a %T, not an object", s)
	}
	return b, strictQualifies(m), nil
}
