package state

import (
	"encoding/json"
	"fmt"
)

// A custom tool takes freeform text instead of JSON arguments (optionally
// constrained by a grammar): the model calls it with a custom_tool_call
// whose input is the text, and the answer is a custom_tool_call_output.
// The pair follows the rules of a function call and its output.

// approvable reports whether a call of kind k can wait for an approval.
func (k Kind) approvable() bool {
	return k == KindToolCall || k == KindCustomCall || k == KindMCPApprovalRequest
}

// CustomCall returns a custom tool call item: the model called the custom
// tool name with the freeform text input. id is the model's item ID and may
// be empty.
func CustomCall(id, callID, name, input string) Item {
	b := make([]byte, 0, 80+len(id)+len(callID)+len(name)+len(input))
	b = append(b, `{"type":"custom_tool_call"`...)
	if id != "" {
		b = appendField(b, "id", id)
	}
	b = appendField(b, "call_id", callID)
	b = appendField(b, "name", name)
	b = appendField(b, "input", input)
	b = append(b, '}')
	return newItem(KindCustomCall, callID, name, input, b)
}

// CustomOutput returns the output item of the custom tool call callID.
func CustomOutput(callID, name, output string) Item {
	b := make([]byte, 0, 64+len(callID)+len(output))
	b = append(b, `{"type":"custom_tool_call_output"`...)
	b = appendField(b, "call_id", callID)
	b = appendField(b, "output", output)
	b = append(b, '}')
	return newItem(KindCustomOutput, callID, name, output, b)
}

// parseCustomCall parses a custom_tool_call: its text is the input.
func parseCustomCall(raw []byte) (Item, error) {
	var v struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
		Input  string `json:"input"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", KindCustomCall, err)
	}
	if v.Type != "custom_tool_call" {
		return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"custom_tool_call\"", KindCustomCall, v.Type)
	}
	if v.CallID == "" || v.Name == "" {
		return Item{}, fmt.Errorf("state: parse %s item: missing call_id or name", KindCustomCall)
	}
	return Item{kind: KindCustomCall, callID: v.CallID, name: v.Name, text: v.Input, raw: append([]byte(nil), raw...)}, nil
}

// parseCustomOutput parses a custom_tool_call_output: its text is the
// output (the text parts of a list of content parts, joined).
func parseCustomOutput(raw []byte) (Item, error) {
	var v struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", KindCustomOutput, err)
	}
	if v.Type != "custom_tool_call_output" {
		return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"custom_tool_call_output\"", KindCustomOutput, v.Type)
	}
	if v.CallID == "" {
		return Item{}, fmt.Errorf("state: parse %s item: missing call_id", KindCustomOutput)
	}
	text, err := contentText(v.Output)
	if err != nil {
		return Item{}, fmt.Errorf("state: parse %s item output: %w", KindCustomOutput, err)
	}
	return Item{kind: KindCustomOutput, callID: v.CallID, text: text, raw: append([]byte(nil), raw...), list: isList(v.Output)}, nil
}
