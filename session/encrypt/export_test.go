package encrypt

import (
	"context"

	"github.com/turnkit/turnkit/state"
)

// LoadKey loads the session's data key into kr's cache, creating it.
func LoadKey(ctx context.Context, kr *Keyring, sessionID string) error {
	_, err := kr.key(ctx, sessionID, true)
	return err
}

// SealItems is what an append through a wrapper does to items.
func SealItems(ctx context.Context, kr *Keyring, sessionID, runID string, items []state.Item) ([]state.Item, error) {
	dk, err := kr.key(ctx, sessionID, true)
	if err != nil {
		return nil, err
	}
	return sealAll(dk, sessionID, runID, items)
}
