// Package wire is the checkpoint format of package state: the one
// declaration of its schema ([Envelope], [Signature], [Run], [Item]), the
// field tables the hand-written fast paths derive from it ([FieldsOf]),
// the variants encoding/json decodes into ([Decoded], [Raw]), the
// checkpoint-specific readers over internal/jsonscan's scanner ([OptQuoted],
// [Delegate]) and the JSON path of an error offset ([PathAt]).
//
// It knows nothing of runs or items as values: the parts of the schema
// that are package state's types (an item's kind, the response boundary,
// approvals, decisions, guardrail results, usage) are type parameters, so
// that their own JSON stays declared once, on those types.
package wire
