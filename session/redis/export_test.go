package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/state"
)

// SessionKeys returns the keys of a session, for tests.
func (s *Store) SessionKeys(sessionID string) []string { return s.keys(sessionID) }

// ClearedKeys returns the keys of a session that Clear removes, for tests.
func (s *Store) ClearedKeys(sessionID string) []string { return s.keys(sessionID)[:clearKeys] }

// RunKeys returns the keys of a run's checkpoint, for tests.
func (s *Store) RunKeys(runID string) []string { return s.runKeys(runID) }

// CachedPlace returns the place the store remembers run runID of session
// sessionID by, or "", for tests.
func (s *Store) CachedPlace(sessionID, runID string) string { return s.places.get(sessionID, runID) }

// AppendV1 appends items of run runID to the session with script, the
// append script of the version before the prepared form
// (testdata/append-v1.lua), and its arguments: the batch alone. It
// returns the script's reply, for TestRollingUpgrade.
func (s *Store) AppendV1(ctx context.Context, script *goredis.Script, sessionID, runID string, items []state.Item) (any, error) {
	fresh := &Store{client: s.client, prefix: s.prefix, listing: s.listing, items: s.items} // remembers no place
	args, err := fresh.appendArgs(ctx, nil, sessionID, runID, items)
	if err != nil {
		return nil, err
	}
	return script.Run(ctx, s.client, s.keys(sessionID), args[0], args[2]).Result() // the run ID and the batch
}
