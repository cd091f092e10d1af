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
//     item of type "gemini_part": {"type":"gemini_part","role":"model",
//     "part":{…}}, the part as the client decoded it.
//
// Both are sent back as they came: the signature on the part made from
// the item that follows it, the opaque part as it is.

// geminiMember is the "gemini" member of a reasoning item.
type geminiMember struct {
	Thought          bool   `json:"thought,omitempty"`
	ThoughtSignature []byte `json:"thoughtSignature,omitempty"`
}

// opaqueType is the type of an opaque item that holds a Gemini part.
const opaqueType = "gemini_part"

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

// opaqueItem returns the opaque item that keeps a part.
func opaqueItem(role string, p *genai.Part) (state.Item, error) {
	part, err := json.Marshal(p)
	if err != nil {
		return state.Item{}, err
	}
	b := make([]byte, 0, 48+len(role)+len(part))
	b = append(b, `{"type":"gemini_part","role":`...)
	b = jsonw.AppendString(b, role)
	b = append(b, `,"part":`...)
	b = append(b, part...)
	return state.Opaque(append(b, '}'))
}

// geminiPart reads an opaque item made by opaqueItem; ok is false for any
// other opaque item.
func geminiPart(it state.Item) (role string, p *genai.Part, ok bool) {
	if it.Name() != opaqueType {
		return "", nil, false
	}
	var v struct {
		Role string      `json:"role"`
		Part *genai.Part `json:"part"`
	}
	if json.Unmarshal(it.Raw(), &v) != nil || v.Part == nil {
		return "", nil, false
	}
	if v.Role != genai.RoleUser {
		v.Role = genai.RoleModel
	}
	return v.Role, v.Part, true
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
