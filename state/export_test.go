package state

// The encoding/json reference paths and the fast paths alone, for the
// differential tests of codec_fast_test.go.

// UnmarshalReference is Unmarshal without its fast paths.
func UnmarshalReference(data []byte, opts ...UnmarshalOption) (*Run, error) {
	cfg := newUnmarshalConfig(opts)
	if int64(len(data)) > cfg.maxSize {
		return Unmarshal(data, opts...) // the size error
	}
	return unmarshalJSON(data, &cfg, false)
}

// UnmarshalFastOnly is Unmarshal's fast path alone: nil where it does not
// apply.
func UnmarshalFastOnly(data []byte, keys map[string][]byte) *Run {
	r, _, _, _ := unmarshalFast(data, keys)
	return r
}

// MarshalReference is Marshal with encoding/json.
func MarshalReference(r *Run, opts ...MarshalOption) ([]byte, error) {
	var cfg marshalConfig
	for _, o := range opts {
		o.applyMarshal(&cfg)
	}
	return marshalWireJSON(r.wire(), &cfg)
}

// ParseItemReference is ParseItem with encoding/json.
func ParseItemReference(kind Kind, raw []byte) (Item, error) {
	if !kind.Valid() {
		return ParseItem(kind, raw) // the kind error
	}
	return parseItemJSON(kind, raw)
}

// ParseItemFastOnly is ParseItem's fast path alone.
func ParseItemFastOnly(kind Kind, raw []byte) (Item, bool) { return parseItemFast(kind, raw) }

// JournalLen returns the number of positions r keeps for its next delta.
func JournalLen(r *Run) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.journal)
}

// DeltaReference is Run.Delta with the head encoded by encoding/json.
func DeltaReference(r *Run) (*Delta, error) { return r.deltaWith(new(marshalConfig), marshalWireJSON) }

// AssembleReference is Assemble decoding with encoding/json.
func AssembleReference(head, context []byte, items []Piece) (*Run, error) {
	return assemble(head, context, items, false, nil)
}
