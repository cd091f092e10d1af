package session

import (
	"context"

	"github.com/turnkit/turnkit/state"
)

// An ItemCodec turns a session item into the JSON a store keeps for it
// and back, in the store's own buffers: session/encrypt's Keyring is one,
// which seals an item as the store writes it and opens it as the store
// reads it, without a sealed state.Item between the two. SealItem appends
// the stored form of item it of run runID to dst; OpenItem rebuilds the
// item stored as stored (runID is "" when the read does not know the
// item's run). A store returns their errors as they are, wrapped with
// where they happened. A store given none keeps an item's canonical JSON;
// session/sqlite, session/postgres and session/redis take one with their
// WithItemCodec option.
type ItemCodec interface {
	SealItem(ctx context.Context, dst []byte, sessionID, runID string, it state.Item) ([]byte, error)
	OpenItem(ctx context.Context, sessionID, runID string, kind state.Kind, seq int64, name string, stored []byte) (state.Item, error)
}
