package state

import (
	"encoding/json"
	"fmt"
)

// Items whose kind is read from their "type" field: the calls of tools the
// Responses API defines (web search, file search, code interpreter, image
// generation, remote MCP, computer use, shell …) and items of a type
// turnkit does not interpret. Their canonical JSON is the item as the model
// sent it, kept byte for byte (compacted), so that it is stored, replayed to
// the model and checkpointed unchanged; the API adds item types faster than
// any library ships, and an unknown one is never an error.

// isTyped reports whether items of kind k are read by parseTyped.
func (k Kind) isTyped() bool { return k >= KindHostedCall }

// firstClass lists the item types that the model adapters read as kinds
// of their own: a hosted call or an opaque item of one of these types is a
// mislabelled item, so ParseItem refuses it. (A function_call_output in a
// response's output, which a server-side tool may produce, is opaque: it
// answers no call of turnkit's.)
var firstClass = map[string]bool{
	"message":       true,
	"function_call": true,
	"reasoning":     true,

	"mcp_approval_request": true,
	"custom_tool_call":     true,
}

// parseTyped parses an item of a kind that isTyped: a JSON object with a
// non-empty "type". Its name is the type, its text the status, and a
// hosted call's call ID its "id" (or "call_id" when it has no "id").
func parseTyped(kind Kind, raw []byte) (Item, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return Item{}, fmt.Errorf("state: parse %s item: not a JSON object", kind)
	}
	switch kind {
	case KindMCPApprovalRequest:
		return parseMCPRequest(raw)
	case KindMCPApprovalResponse:
		return parseMCPResponse(raw)
	case KindCustomCall:
		return parseCustomCall(raw)
	case KindCustomOutput:
		return parseCustomOutput(raw)
	}
	// A map, so that fields of any JSON type decode: only "type" must be a
	// string; the others are read when they are strings.
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", kind, err)
	}
	var typ string
	if err := json.Unmarshal(v["type"], &typ); err != nil || typ == "" {
		return Item{}, fmt.Errorf("state: parse %s item: missing type", kind)
	}
	if firstClass[typ] {
		return Item{}, fmt.Errorf("state: parse %s item: type %q has a kind of its own", kind, typ)
	}
	it := Item{kind: kind, name: typ, text: stringField(v, "status"), raw: append([]byte(nil), raw...)}
	if kind == KindHostedCall {
		if it.callID = stringField(v, "id"); it.callID == "" {
			it.callID = stringField(v, "call_id")
		}
	}
	return it, nil
}

// stringField returns the field of v named name if it is a string, and ""
// otherwise.
func stringField(v map[string]json.RawMessage, name string) string {
	var s string
	if f := v[name]; len(f) > 0 && f[0] == '"' {
		_ = json.Unmarshal(f, &s)
	}
	return s
}

// HostedCall returns a hosted call item: a call of a tool the Responses API
// defines, such as a web_search_call, whose JSON is raw as the model sent
// it. It is [ParseItem] with [KindHostedCall].
func HostedCall(raw []byte) (Item, error) { return ParseItem(KindHostedCall, raw) }

// Opaque returns an item of a type turnkit does not interpret, whose JSON
// is raw as the model sent it. It is [ParseItem] with [KindOpaque].
func Opaque(raw []byte) (Item, error) { return ParseItem(KindOpaque, raw) }
