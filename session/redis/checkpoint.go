package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

var _ state.Store = (*Store)(nil)

func (s *Store) storeErr(ctx context.Context, op, runID string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		err = session.ErrClosed
	}
	return s.gate.WrapRun(ctx, op, runID, err)
}

// checkpointKey is a hash with fields v (version) and d (the checkpoint).
func (s *Store) checkpointKey(runID string) string { return s.prefix + "checkpoint:{" + runID + "}" }

// saveScript writes a checkpoint if its stored version is ARGV[1] (0: none
// stored). KEYS: the checkpoint hash. ARGV: expected version, data. It
// returns -1 on success, or the stored version on a conflict.
var saveScript = goredis.NewScript(`
local stored = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if stored ~= tonumber(ARGV[1]) then return stored end
redis.call('HSET', KEYS[1], 'v', stored + 1, 'd', ARGV[2])
return -1
`)

// Load returns the run's checkpoint, a new [state.Run] with its stored
// version set, or a [*state.StoreError] wrapping [state.ErrNotFound]. It
// reads version and data with one HMGET.
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	if err := s.gate.BeginRun(ctx, "load", runID); err != nil {
		return nil, err
	}
	var v struct {
		Version int64  `redis:"v"`
		Data    string `redis:"d"`
	}
	res := s.client.HMGet(ctx, s.checkpointKey(runID), "v", "d")
	if err := res.Err(); err != nil {
		return nil, s.storeErr(ctx, "load", runID, err)
	}
	if vals := res.Val(); len(vals) != 2 || vals[0] == nil || vals[1] == nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	if err := res.Scan(&v); err != nil {
		return nil, s.storeErr(ctx, "load", runID, err)
	}
	return s.codec.DecodeRun(runID, v.Version, []byte(v.Data))
}

// Save writes run's checkpoint if the stored version equals run.Version()
// (0: none stored), checking and writing in one Lua script, and then sets
// run's version to the new one. Otherwise it returns a [*state.StoreError]
// wrapping [state.ErrConflict] and changes nothing: of two workers saving
// the same version, exactly one wins.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	data, err := s.codec.Encode(run)
	if err != nil {
		return err
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	have := run.Version()
	stored, err := saveScript.Run(ctx, s.client, []string{s.checkpointKey(run.ID())}, have, data).Int64()
	if err != nil {
		return s.storeErr(ctx, "save", run.ID(), err)
	}
	if stored != -1 {
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: have, Stored: stored, Err: state.ErrConflict}
	}
	run.SetVersion(have + 1)
	return nil
}

// Delete removes the run's checkpoint; deleting a missing one is not an
// error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	return s.storeErr(ctx, "delete", runID, s.client.Del(ctx, s.checkpointKey(runID)).Err())
}
