package rowcodec

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// ItemCodec is [session.ItemCodec], as the stores hold it.
type ItemCodec = session.ItemCodec

// A Reader rebuilds the items of one read of session SessionID: with no
// Codec, as [Decode] does; with one, through its OpenItem.
type Reader struct {
	Ctx       context.Context
	Codec     ItemCodec
	SessionID string
	RunID     string
}

// Decode rebuilds a stored item (see [Decode]); the codec's errors are
// returned as they are, so that callers see their types.
func (r *Reader) Decode(kind string, seq int64, name string, raw []byte) (state.Item, error) {
	if r.Codec == nil {
		return Decode(kind, seq, name, raw)
	}
	if seq < 1 {
		return state.Item{}, fmt.Errorf("%w: position %d", session.ErrCorrupt, seq)
	}
	k, err := state.ParseKind(kind)
	if err != nil {
		return state.Item{}, fmt.Errorf("%w: %w", session.ErrCorrupt, err)
	}
	return r.Codec.OpenItem(r.Ctx, r.SessionID, r.RunID, k, seq, name, raw)
}

// ScanItemStamp is [ScanItemStamp] through r.
func (r *Reader) ScanItemStamp(sc Scanner, stamp *int64) (state.Item, error) {
	var (
		seq        int64
		kind, name string
		raw        []byte
		err        error
	)
	if stamp != nil {
		err = sc.Scan(&seq, &kind, &name, &raw, stamp)
	} else {
		err = sc.Scan(&seq, &kind, &name, &raw)
	}
	if err != nil {
		return state.Item{}, err
	}
	it, err := r.Decode(kind, seq, name, raw)
	if err != nil {
		return state.Item{}, fmt.Errorf("decode item at seq %d: %w", seq, err)
	}
	return it, nil
}

// ScanHistory is [ScanHistory] through r.
func (r *Reader) ScanHistory(rows Rows) (session.History, error) {
	var (
		h    session.History
		last int64
	)
	for rows.Next() {
		it, err := r.ScanItemStamp(rows, &last)
		if err != nil {
			return session.History{}, err
		}
		h.Items = append(h.Items, it)
	}
	if err := rows.Err(); err != nil {
		return session.History{}, err
	}
	h.Stamp = last + 1
	return h, nil
}
