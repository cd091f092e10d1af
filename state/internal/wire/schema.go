package wire

import "encoding/json"

// The wire shapes of schema version 1: the only place their JSON names
// are written. Field names are part of the format: change them only with
// a new version and a migration. A field tagged wire:"required" must be
// present (and not null) in a checkpoint.
type (
	// Envelope is a checkpoint document; Run is the run object, and
	// Signature is present only when the checkpoint is signed.
	Envelope struct {
		Schema    string          `json:"schema"`
		Version   int             `json:"version"`
		Run       json.RawMessage `json:"run"`
		Signature *Signature      `json:"signature,omitempty"`
	}

	// Signature is the "signature" member of a signed checkpoint.
	Signature struct {
		KeyID string `json:"key_id"`
		MAC   string `json:"mac"`
	}

	// Run is the run object. K is the item kind, B the response boundary,
	// A a pending approval, D a decision, G a guardrail result and U the
	// usage, M a model call: package state's types, which declare their
	// own JSON.
	Run[K, B, A, D, G, U, M any] struct {
		ID          string                     `json:"id" wire:"required"`
		Agent       string                     `json:"agent"`
		Turn        int                        `json:"turn"`
		MaxTurns    int                        `json:"max_turns"`
		Version     int64                      `json:"version"`
		NextSeq     int64                      `json:"next_seq" wire:"required"`
		Input       []Item[K]                  `json:"input"`
		Items       []Item[K]                  `json:"items"`
		Response    B                          `json:"response"`
		Context     []Item[K]                  `json:"context"`
		ContextFrom int                        `json:"context_from"`
		Pending     []A                        `json:"pending"`
		Decisions   []D                        `json:"decisions"`
		Guardrails  []G                        `json:"guardrails"`
		Usage       U                          `json:"usage"`
		ModelCalls  []M                        `json:"model_calls,omitempty"`
		SessionID   string                     `json:"session_id,omitempty"`
		Watermark   int64                      `json:"session_watermark"`
		Trace       map[string]string          `json:"trace,omitempty"`
		Final       string                     `json:"final_output,omitempty"`
		Finished    bool                       `json:"finished"`
		Extension   map[string]json.RawMessage `json:"extension,omitempty"`
	}

	// Item carries an item's position, kind and canonical JSON. Name is
	// written for outputs only: their JSON carries just the call ID.
	Item[K any] struct {
		Seq  int64           `json:"seq"`
		Kind K               `json:"kind"`
		Name string          `json:"name,omitempty"`
		Raw  json.RawMessage `json:"raw"`
	}
)
