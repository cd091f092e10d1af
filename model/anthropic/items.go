package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/state"
)

// How the adapter keeps content blocks that have no item of their own.
//
// A thinking or redacted_thinking block becomes a reasoning item whose
// JSON is a Responses-API reasoning item (its summary is the thinking
// text) carrying the block itself under "anthropic":
//
//	{"type":"reasoning","summary":[{"type":"summary_text","text":"…"}],
//	 "anthropic":{"type":"thinking","thinking":"…","signature":"…"}}
//
// A block of any other type the adapter does not read (a server tool's
// use and result, say) becomes an opaque item of type "anthropic.<type>"
// carrying the block the same way. The adapter sends the block under
// "anthropic" back verbatim; reasoning items without one come from another
// provider and are not sent.
const blockKey = "anthropic"

// anthropicBlock returns the Messages API block an item carries, or nil.
func anthropicBlock(it state.Item) json.RawMessage {
	if it.RawLen() < len(blockKey)+4 {
		return nil
	}
	raw := it.Raw()
	if !bytes.Contains(raw, []byte(`"`+blockKey+`":`)) {
		return nil
	}
	var v struct {
		Block json.RawMessage `json:"anthropic"`
	}
	if json.Unmarshal(raw, &v) != nil || len(v.Block) == 0 || v.Block[0] != '{' {
		return nil
	}
	return v.Block
}

// A block is a content block of a response, as the body lists it or as a
// stream builds it.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`

	raw    json.RawMessage // the block as sent, for the types kept opaque
	args   string          // the input compacted, as readMessage reads it
	output bool            // a stream's tool_use of the output tool
	// A stream's text deltas, joined: texts[textAt:textEnd] of the
	// stream's arena (see streamReader).
	textAt, textEnd int
}

// refusedText is the refusal of a response stopped for a refusal that
// carries no text of its own.
const refusedText = "The model declined to answer (stop_reason: refusal)."

// responseItems converts a response's blocks, in order: text blocks to
// assistant messages, tool_use blocks to calls, thinking blocks to
// reasoning items, anything else to opaque items. The text of a response
// stopped for a refusal becomes one refusal message.
//
// A tool_use of outputTool (see [WithOutputTool]) becomes an assistant
// message whose text is its input: the structured output.
func responseItems(msgID string, blocks []block, stopReason, outputTool string) ([]state.Item, error) {
	items := make([]state.Item, 0, len(blocks))
	refusal := stopReason == "refusal"
	refusalAt, refusalText := -1, ""
	for i, b := range blocks {
		var (
			it  state.Item
			err error
		)
		switch b.Type {
		case "text":
			if refusal {
				if refusalAt < 0 {
					refusalAt = len(items)
					items = append(items, state.Item{}) // placed below
				}
				refusalText += b.Text
				continue
			}
			if b.Text == "" {
				continue
			}
			it = state.AssistantMessage(msgID, b.Text)
		case "tool_use":
			if outputTool != "" && b.Name == outputTool {
				if refusal {
					continue // the refusal is the whole answer
				}
				it = state.AssistantMessage(msgID, b.arguments())
				break
			}
			if b.ID == "" || b.Name == "" {
				return nil, &DecodeError{Where: "content[" + strconv.Itoa(i) + "]", Err: fmt.Errorf("tool_use without id or name")}
			}
			it = state.ToolCall("", b.ID, b.Name, b.arguments())
		case "thinking":
			raw := append([]byte(`{"type":"reasoning","summary":[{"type":"summary_text","text":`), jsonw.AppendString(nil, b.Thinking)...)
			raw = append(raw, `}],"anthropic":{"type":"thinking","thinking":`...)
			raw = jsonw.AppendString(raw, b.Thinking)
			raw = append(raw, `,"signature":`...)
			raw = jsonw.AppendString(raw, b.Signature)
			it, err = state.ParseItem(state.KindReasoning, append(raw, "}}"...))
		case "redacted_thinking":
			raw := append([]byte(`{"type":"reasoning","summary":[],"anthropic":{"type":"redacted_thinking","data":`), jsonw.AppendString(nil, b.Data)...)
			it, err = state.ParseItem(state.KindReasoning, append(raw, "}}"...))
		default:
			raw := append([]byte(`{"type":`), jsonw.AppendString(nil, "anthropic."+b.Type)...)
			raw = append(raw, `,"anthropic":`...)
			raw = append(raw, normalize(b.raw)...)
			it, err = state.ParseItem(state.KindOpaque, append(raw, '}'))
		}
		if err != nil {
			return nil, &DecodeError{Where: "content[" + strconv.Itoa(i) + "]", Err: err}
		}
		items = append(items, it)
	}
	if refusal {
		if refusalAt < 0 {
			refusalAt, refusalText = len(items), refusedText
			items = append(items, state.Item{})
		}
		raw := append([]byte(`{"type":"message","id":`), jsonw.AppendString(nil, msgID)...)
		raw = append(raw, `,"role":"assistant","status":"completed","content":[{"type":"refusal","refusal":`...)
		raw = jsonw.AppendString(raw, refusalText)
		it, err := state.ParseItem(state.KindAssistantMessage, append(raw, "}]}"...))
		if err != nil {
			return nil, &DecodeError{Where: "refusal", Err: err}
		}
		items[refusalAt] = it
	}
	return items, nil
}

// arguments returns the block's input as a call's arguments: as
// readMessage compacted it, or as [arguments] makes it.
func (b *block) arguments() string {
	if b.args != "" {
		return b.args
	}
	return arguments(b.Input)
}

// arguments returns a tool_use input as the call's arguments: the JSON
// object, compacted, so that a plain and a streamed response give the
// same text; "{}" for none.
func arguments(input json.RawMessage) string {
	if len(bytes.TrimSpace(input)) == 0 {
		return "{}"
	}
	if bytes.IndexAny(input, " \t\r\n") < 0 {
		return string(input) // compact already: Compact gives it back or refuses it
	}
	var buf bytes.Buffer
	if json.Compact(&buf, input) != nil {
		return string(input)
	}
	return buf.String()
}

// normalize returns a block of a type kept opaque in one form however the
// server wrote it, plain or streamed: its members sorted by name.
func normalize(raw json.RawMessage) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// known reports a block of a type the adapter reads into an item of its
// own; the others are kept opaque, as their JSON.
func (b *block) known() bool {
	switch b.Type {
	case "text", "tool_use", "thinking", "redacted_thinking":
		return true
	}
	return false
}

// readBlock decodes one block of a response body.
func readBlock(raw json.RawMessage) (block, error) {
	var b block
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, err
	}
	if !b.known() {
		b.raw = raw
	}
	return b, nil
}

// otherProvider reports an opaque item another provider's adapter made
// for that provider only: its type is "<provider>.<kind>" and it carries
// its block under "<provider>", as model/gemini's do. Like another
// provider's reasoning, it is not sent, and stays in the session.
func otherProvider(it state.Item) bool {
	provider, _, ok := strings.Cut(it.Name(), ".")
	if !ok || provider == "" || provider == blockKey {
		return false
	}
	return bytes.Contains(it.Raw(), []byte(`"`+provider+`":{`))
}
