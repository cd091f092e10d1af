package state

import (
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"strconv"

	"github.com/turnkit/turnkit/state/internal/wire"
)

// Kind says what an [Item] is. The zero Kind is invalid: every item has a
// kind, and a decoded item without one is an error rather than a guess.
// Kinds are written by name (see [Kind.String]); the names are stable across
// releases.
type Kind uint8

// The kinds of item a run holds.
const (
	KindUserMessage      Kind = iota + 1 // a message with role user
	KindAssistantMessage                 // a message the model produced
	KindSystemMessage                    // a message with role system or developer
	KindReasoning                        // a reasoning item the model produced
	KindToolCall                         // a function call the model asked for
	KindToolOutput                       // the output of a function call
	KindHandoffCall                      // a transfer_to_<agent> call
	KindHandoffOutput                    // the output that acknowledges a handoff

	KindHostedCall          // a call of a tool the API defines, such as web_search_call
	KindOpaque              // an item of a type turnkit does not interpret
	KindMCPApprovalRequest  // a remote MCP server's request to approve a call
	KindMCPApprovalResponse // the answer to an MCP approval request
	KindCustomCall          // a call of a custom tool, with freeform text input
	KindCustomOutput        // the output of a custom tool call
)

var kindNames = [...]string{
	KindUserMessage:      "user_message",
	KindAssistantMessage: "assistant_message",
	KindSystemMessage:    "system_message",
	KindReasoning:        "reasoning",
	KindToolCall:         "tool_call",
	KindToolOutput:       "tool_output",
	KindHandoffCall:      "handoff_call",
	KindHandoffOutput:    "handoff_output",
	KindHostedCall:       "hosted_call",
	KindOpaque:           "opaque",

	KindMCPApprovalRequest:  "mcp_approval_request",
	KindMCPApprovalResponse: "mcp_approval_response",
	KindCustomCall:          "custom_call",
	KindCustomOutput:        "custom_output",
}

// String returns the kind's stable name, such as "tool_call".
func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k != 0 && int(k) < len(kindNames) }

// ParseKind returns the Kind whose stable name is s.
func ParseKind(s string) (Kind, error) {
	for k := KindUserMessage; int(k) < len(kindNames); k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("state: unknown item kind %q", s)
}

// MarshalText writes the kind's stable name.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("state: marshal invalid item kind %d", k)
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a stable kind name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// IsCall reports whether the kind is a call that expects an output: a
// function call (tool or handoff), a custom tool call or an MCP approval
// request.
func (k Kind) IsCall() bool {
	return k == KindToolCall || k == KindHandoffCall || k == KindCustomCall || k == KindMCPApprovalRequest
}

// IsOutput reports whether the kind is the output of a call: a function
// call's output (tool or handoff), a custom tool call's output or an MCP
// approval response.
func (k Kind) IsOutput() bool {
	return k == KindToolOutput || k == KindHandoffOutput || k == KindCustomOutput || k == KindMCPApprovalResponse
}

// isFunction reports whether the kind is a function call or its output.
func (k Kind) isFunction() bool { return k >= KindToolCall && k <= KindHandoffOutput }

// An Item is one entry of a run: a message, a reasoning item, a call or an
// output. It is an immutable value: its fields are unexported and every
// accessor returns a copy, so an Item handed out never aliases the state it
// came from and can be shared between goroutines freely.
//
// An item's position (its Seq) is assigned once, when the run records it:
// the items of a model response in the order the model produced them, then
// the outputs of its calls in call order. A zero Seq means "not yet placed".
type Item struct {
	seq  int64
	kind Kind
	// list reports that a user message's content or an output's output is
	// a list of parts rather than a string (see [Item.Content]).
	list bool
	// canon reports that raw is as encoding/json writes it as a
	// json.RawMessage (compact, with <, >, &, U+2028 and U+2029 escaped),
	// as the constructors below write it and the decoders found it, so
	// that a checkpoint copies it without scanning it again (appendItem).
	canon  bool
	callID string
	name   string // tool or agent name, for calls and outputs
	text   string // message text, call arguments, or output
	raw    []byte // canonical Responses-API input item JSON; never mutated
}

// Seq returns the item's position in its run, or 0 if it has none yet.
func (it Item) Seq() int64 { return it.seq }

// Kind returns what the item is.
func (it Item) Kind() Kind { return it.kind }

// CallID returns the call ID of a call or output item, the item ID of a
// hosted call, and "" otherwise.
func (it Item) CallID() string { return it.callID }

// Name returns the tool name of a tool call, the target agent's function
// name of a handoff call, the item type of a hosted call or an opaque item
// (such as "web_search_call"), and "" otherwise.
func (it Item) Name() string { return it.name }

// Text returns a message's text, a call's JSON arguments, or an output's
// text. Reasoning items return their summary text; hosted calls and opaque
// items return their status (such as "completed"), if they have one.
func (it Item) Text() string { return it.text }

// Raw returns a copy of the item's canonical Responses-API input item JSON.
func (it Item) Raw() json.RawMessage { return append(json.RawMessage(nil), it.raw...) }

// RawLen returns the length of the item's canonical JSON without copying it.
func (it Item) RawLen() int { return len(it.raw) }

// AppendRaw appends the item's canonical JSON to dst and returns the
// extended buffer. It lets encoders avoid the copy [Item.Raw] makes.
func (it Item) AppendRaw(dst []byte) []byte { return append(dst, it.raw...) }

// IsZero reports whether it is the zero Item.
func (it Item) IsZero() bool { return it.kind == 0 }

// WithSeq returns a copy of the item placed at position seq. The copy shares
// the item's immutable JSON.
func (it Item) WithSeq(seq int64) Item {
	it.seq = seq
	return it
}

// Equal reports whether two items have the same position, kind, call ID and
// canonical JSON.
func (it Item) Equal(o Item) bool {
	return it.seq == o.seq && it.kind == o.kind && it.callID == o.callID &&
		it.name == o.name && string(it.raw) == string(o.raw)
}

// String returns a short description for logs and test failures.
func (it Item) String() string {
	s := strconv.FormatInt(it.seq, 10) + ":" + it.kind.String()
	if it.name != "" {
		s += "(" + it.name + ")"
	}
	if it.callID != "" {
		s += "[" + it.callID + "]"
	}
	return s
}

// UserMessage returns a user message item with the given text.
func UserMessage(text string) Item {
	return canonItem(KindUserMessage, "", "", text, messageRaw("user", text))
}

// SystemMessage returns a developer message item with the given text.
func SystemMessage(text string) Item {
	return canonItem(KindSystemMessage, "", "", text, messageRaw("developer", text))
}

// AssistantMessage returns an assistant message item. id is the model's
// item ID and may be empty.
func AssistantMessage(id, text string) Item {
	return canonItem(KindAssistantMessage, "", "", text, assistantRaw(id, text))
}

// Reasoning returns a reasoning item whose summary is the given text.
func Reasoning(id, summary string) Item {
	return canonItem(KindReasoning, "", "", summary, reasoningRaw(id, summary))
}

// ToolCall returns a function call item. arguments must be the JSON text the
// model produced; it is stored as given, even if it is not valid JSON, so
// that a malformed call can be reported and answered.
func ToolCall(id, callID, name, arguments string) Item {
	return canonItem(KindToolCall, callID, name, arguments, callRaw(id, callID, name, arguments))
}

// ToolOutput returns the output item of the function call callID.
func ToolOutput(callID, name, output string) Item {
	return canonItem(KindToolOutput, callID, name, output, outputRaw(callID, output))
}

// HandoffCall returns a handoff call item: a function call named
// transfer_to_<agent>.
func HandoffCall(id, callID, name, arguments string) Item {
	it := ToolCall(id, callID, name, arguments)
	it.kind = KindHandoffCall
	return it
}

// HandoffOutput returns the output item that acknowledges a handoff.
func HandoffOutput(callID, name, output string) Item {
	it := ToolOutput(callID, name, output)
	it.kind = KindHandoffOutput
	return it
}

// ParseItem builds an item of the given kind from its canonical
// Responses-API JSON, which it validates and copies. It is how stores and
// checkpoints rebuild items; the returned item has no Seq. The members
// it reads (type, call_id, name, arguments, content and output parts,
// summary) match exactly: one named in other letter case, which the API
// would not read, fails with an error wrapping [ErrKeyCase].
func ParseItem(kind Kind, raw []byte) (Item, error) {
	if !kind.Valid() {
		return Item{}, fmt.Errorf("state: parse item: invalid kind %d", kind)
	}
	if it, ok := parseItemFast(kind, raw); ok {
		return it, nil
	}
	return parseItemJSON(kind, raw)
}

// parseItemJSON is ParseItem with encoding/json: the reference for
// parseItemFast (codec_fast.go), and the path of every error.
func parseItemJSON(kind Kind, raw []byte) (Item, error) {
	if kind.isTyped() {
		return parseTyped(kind, raw)
	}
	var v struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
		Content   json.RawMessage `json:"content"`
		Summary   []summaryText   `json:"summary"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", kind, err)
	}
	if key, _ := wire.FoldedKey(raw, shapeOf(kind), "$"); key != "" {
		return Item{}, fmt.Errorf("state: parse %s item: key %s: %w", kind, key, ErrKeyCase)
	}
	it := Item{kind: kind, raw: append([]byte(nil), raw...)}
	switch kind {
	case KindUserMessage, KindSystemMessage, KindAssistantMessage:
		if v.Type != "message" && v.Type != "" {
			return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"message\"", kind, v.Type)
		}
		text, err := contentText(v.Content)
		if err != nil {
			return Item{}, fmt.Errorf("state: parse %s item content: %w", kind, err)
		}
		it.text, it.list = text, kind == KindUserMessage && isList(v.Content)
	case KindReasoning:
		if v.Type != "reasoning" {
			return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"reasoning\"", kind, v.Type)
		}
		for i, s := range v.Summary {
			if i > 0 {
				it.text += "\n"
			}
			it.text += s.Text
		}
	case KindToolCall, KindHandoffCall:
		if v.Type != "function_call" {
			return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"function_call\"", kind, v.Type)
		}
		if v.CallID == "" || v.Name == "" {
			return Item{}, fmt.Errorf("state: parse %s item: missing call_id or name", kind)
		}
		it.callID, it.name, it.text = v.CallID, v.Name, v.Arguments
	case KindToolOutput, KindHandoffOutput:
		if v.Type != "function_call_output" {
			return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"function_call_output\"", kind, v.Type)
		}
		if v.CallID == "" {
			return Item{}, fmt.Errorf("state: parse %s item: missing call_id", kind)
		}
		it.callID = v.CallID
		text, err := contentText(v.Output)
		if err != nil {
			return Item{}, fmt.Errorf("state: parse %s item output: %w", kind, err)
		}
		it.text, it.list = text, isList(v.Output)
	}
	return it, nil
}

// WithName returns a copy of the item that records name as the tool name
// of an output item (Responses-API outputs carry only the call ID).
func (it Item) WithName(name string) Item {
	it.name = name
	return it
}

func newItem(kind Kind, callID, name, text string, raw []byte) Item {
	return Item{kind: kind, callID: callID, name: name, text: text, raw: raw}
}

// canonItem is newItem for raw JSON that itemjson.go wrote, which is
// as encoding/json writes it (see [Item]'s canon).
func canonItem(kind Kind, callID, name, text string, raw []byte) Item {
	it := newItem(kind, callID, name, text, raw)
	it.canon = true
	return it
}

// isList reports whether a JSON value (as encoding/json hands out a
// json.RawMessage: without surrounding whitespace) is an array.
func isList(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '[' }

// contentText reads a message content or output value: a JSON string, or a
// list of parts whose "text" fields are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var s string
	for _, p := range parts {
		s += p.Text + p.Refusal
	}
	return s, nil
}

// The shapes of an item's JSON as parseItemJSON reads it, for
// [wire.FoldedKey]: its keys match exactly, like a checkpoint's, where
// the item is read (a message's content parts, an output's parts, a
// summary). Content and output stay raw where the kind does not read
// them.
type (
	partShape struct {
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	messageShape struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
		Content   []partShape     `json:"content"`
		Summary   []summaryText   `json:"summary"`
	}
	outputShape struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    []partShape     `json:"output"`
		Content   json.RawMessage `json:"content"`
		Summary   []summaryText   `json:"summary"`
	}
	otherShape struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
		Content   json.RawMessage `json:"content"`
		Summary   []summaryText   `json:"summary"`
	}
)

var (
	messageShapeType = reflect.TypeFor[messageShape]()
	outputShapeType  = reflect.TypeFor[outputShape]()
	otherShapeType   = reflect.TypeFor[otherShape]()
)

// shapeOf returns the shape parseItemJSON reads an item of kind k in.
func shapeOf(k Kind) reflect.Type {
	switch {
	case k.isMessage():
		return messageShapeType
	case k.IsOutput():
		return outputShapeType
	}
	return otherShapeType
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Items is a read-only view of a sequence of items, such as a run's history.
// Taking it is O(1): no item is copied. The view is detached from later
// changes: items a run records after the view was taken are not in it, and
// nothing can be changed through it. At and All return Item values, which
// are themselves immutable.
type Items struct {
	head []Item // a replaced history (a handoff input filter's result)
	tail []Item
}

// ItemsOf returns a view of the given items. It copies the slice header only
// when the caller promises not to change s; use [CopyItems] otherwise.
func ItemsOf(s []Item) Items { return Items{tail: s[:len(s):len(s)]} }

// CopyItems returns a view of a copy of s.
func CopyItems(s []Item) Items { return Items{tail: append([]Item(nil), s...)} }

// Len returns the number of items in the view.
func (v Items) Len() int { return len(v.head) + len(v.tail) }

// At returns the i-th item of the view. It panics if i is out of range, like
// a slice index.
func (v Items) At(i int) Item {
	if i < len(v.head) {
		return v.head[i]
	}
	return v.tail[i-len(v.head)]
}

// All yields the items of the view in order with their index.
func (v Items) All() iter.Seq2[int, Item] {
	return func(yield func(int, Item) bool) {
		for i, it := range v.head {
			if !yield(i, it) {
				return
			}
		}
		for i, it := range v.tail {
			if !yield(len(v.head)+i, it) {
				return
			}
		}
	}
}

// Slice returns the items of the view as a new slice.
func (v Items) Slice() []Item {
	out := make([]Item, 0, v.Len())
	out = append(out, v.head...)
	return append(out, v.tail...)
}

// From returns the view of the items at index i and after.
func (v Items) From(i int) Items {
	if i <= len(v.head) {
		return Items{head: v.head[i:], tail: v.tail}
	}
	return Items{tail: v.tail[i-len(v.head):]}
}

// concat returns a view of head followed by tail. Both must be immutable.
func concat(head, tail []Item) Items {
	return Items{head: head[:len(head):len(head)], tail: tail[:len(tail):len(tail)]}
}

// WithKind returns a copy of a call or output item re-kinded between its
// tool and handoff forms (the JSON is the same). Any other change of kind
// returns the item unchanged and false.
func (it Item) WithKind(k Kind) (Item, bool) {
	switch {
	case !it.kind.isFunction() || !k.isFunction():
	case it.kind.IsCall() && k.IsCall(), it.kind.IsOutput() && k.IsOutput():
		it.kind = k
		return it, true
	}
	return it, false
}
