package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/state"
)

// Items of the Gemini API's own, in turnkit's canonical (Responses-API)
// item JSON:
//
//   - a thought part (thought: true) is a reasoning item whose summary is
//     the thought's text, and a thought signature on any other part is a
//     reasoning item of its own, placed just before the item the part
//     becomes; both carry a "gemini" member, {"thought":true} and/or
//     {"thoughtSignature":"<base64>"}, which marks them as this API's;
//   - a part that is neither text nor a function call (executable code,
//     a code execution result, inline data the model made …) is an opaque
//     item of type "gemini.<kind>" carrying the part, as the client
//     decoded it, under "gemini": {"type":"gemini.executableCode",
//     "gemini":{"executableCode":{…}}}.
//
// Both are sent back as they came: the signature on the part made from
// the item that follows it, the opaque part as it is. The "gemini" member
// is the mark the other adapters read (model/anthropic keeps its blocks
// under "anthropic" the same way): an adapter does not send another
// provider's reasoning and opaque items, which stay in the session.

// geminiMember is the "gemini" member of a reasoning item.
type geminiMember struct {
	Thought          bool   `json:"thought,omitempty"`
	ThoughtSignature []byte `json:"thoughtSignature,omitempty"`
}

// opaquePrefix starts the type of an opaque item that holds a Gemini
// part.
const opaquePrefix = "gemini."

// reasoningItem returns the reasoning item of a thought (thought true, its
// text the summary) or of a signature alone.
func reasoningItem(text string, thought bool, sig []byte) (state.Item, error) {
	b := make([]byte, 0, 96+len(text)+len(sig)*4/3)
	b = append(b, `{"type":"reasoning","summary":[`...)
	if text != "" {
		b = append(b, `{"type":"summary_text","text":`...)
		b = jsonw.AppendString(b, text)
		b = append(b, '}')
	}
	b = append(b, `],"gemini":{`...)
	if thought {
		b = append(b, `"thought":true`...)
	}
	if sig != nil {
		if thought {
			b = append(b, ',')
		}
		b = append(b, `"thoughtSignature":"`...)
		b = base64.StdEncoding.AppendEncode(b, sig)
		b = append(b, '"')
	}
	b = append(b, `}}`...)
	return state.ParseItem(state.KindReasoning, b)
}

// geminiReasoning reads the "gemini" member of a reasoning item; ok is
// false for another API's reasoning.
func geminiReasoning(it state.Item) (geminiMember, bool) {
	var buf [512]byte
	raw := it.AppendRaw(buf[:0])
	if !bytes.Contains(raw, []byte(`"gemini"`)) {
		return geminiMember{}, false
	}
	var v struct {
		Gemini *geminiMember `json:"gemini"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Gemini == nil {
		return geminiMember{}, false
	}
	return *v.Gemini, true
}

// opaqueItem returns the opaque item that keeps a model part.
func opaqueItem(p *genai.Part) (state.Item, error) {
	part, err := json.Marshal(p)
	if err != nil {
		return state.Item{}, err
	}
	kind := partKind(p)
	b := make([]byte, 0, 32+len(kind)+len(part))
	b = append(b, `{"type":"gemini.`...)
	b = append(b, kind...)
	b = append(b, `","gemini":`...)
	b = append(b, part...)
	return state.Opaque(append(b, '}'))
}

// partKind names what a part holds, after its JSON member.
func partKind(p *genai.Part) string {
	switch {
	case p.ExecutableCode != nil:
		return "executableCode"
	case p.CodeExecutionResult != nil:
		return "codeExecutionResult"
	case p.InlineData != nil:
		return "inlineData"
	case p.FileData != nil:
		return "fileData"
	case p.FunctionResponse != nil:
		return "functionResponse"
	case p.ToolCall != nil:
		return "toolCall"
	case p.ToolResponse != nil:
		return "toolResponse"
	}
	return "part"
}

// geminiPart reads an opaque item made by opaqueItem; ok is false for any
// other opaque item.
func geminiPart(it state.Item) (p *genai.Part, ok bool) {
	if !strings.HasPrefix(it.Name(), opaquePrefix) {
		return nil, false
	}
	var v struct {
		Part *genai.Part `json:"gemini"`
	}
	if json.Unmarshal(it.Raw(), &v) != nil || v.Part == nil {
		return nil, false
	}
	return v.Part, true
}

// otherProvider reports an opaque item another provider's adapter made
// for that provider only: its type is "<provider>.<kind>" and it carries
// the block under "<provider>", as model/anthropic's do. Like another
// provider's reasoning, it is not sent, and stays in the session.
func otherProvider(it state.Item) bool {
	provider, _, ok := strings.Cut(it.Name(), ".")
	if !ok || provider == "" || provider == "gemini" {
		return false
	}
	var buf [256]byte
	return bytes.Contains(it.AppendRaw(buf[:0]), []byte(`"`+provider+`":{`))
}

// genIDPrefix starts the call IDs the adapter makes for function calls
// the API sent without one. They are not sent back: the API matches such
// calls by name and order.
const genIDPrefix = "gemini-call-"

// wireID returns the ID to send for a call ID: "" for one the adapter
// made.
func wireID(callID string) string {
	if strings.HasPrefix(callID, genIDPrefix) {
		return ""
	}
	return callID
}
