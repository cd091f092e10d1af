package gemini

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// modelResponse converts a response (a plain one, or the chunks of a
// stream gathered into one): the first candidate's parts become items, in
// order; a blocked prompt or a candidate that finished abnormally is a
// *FinishError.
func modelResponse(r *genai.GenerateContentResponse, agent string) (*pipeline.ModelResponse, error) {
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		if f := r.PromptFeedback; f != nil && f.BlockReason != "" {
			return nil, &FinishError{Agent: agent, ResponseID: r.ResponseID, Reason: string(f.BlockReason), Message: f.BlockReasonMessage, Prompt: true}
		}
		return nil, &DecodeError{Where: "response", Err: errors.New("no candidates")}
	}
	cand := r.Candidates[0]
	switch reason := string(cand.FinishReason); reason {
	case "", string(genai.FinishReasonUnspecified), string(genai.FinishReasonStop), string(genai.FinishReasonMaxTokens):
	default:
		return nil, &FinishError{Agent: agent, ResponseID: r.ResponseID, Reason: reason, Message: cand.FinishMessage}
	}
	var parts []*genai.Part
	if cand.Content != nil {
		parts = mergeText(nil, cand.Content.Parts)
	}
	items, err := partItems(r.ResponseID, parts)
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: r.ResponseID, Model: r.ModelVersion, Items: items, Usage: usage(r.UsageMetadata)}, nil
}

// mergeText appends parts to dst, joining each text part to the text part
// before it when both are thoughts or both are not, and the two do not
// both carry a thought signature. A stream splits one text part into many
// chunks, with the signature on one of them (often a last, empty one):
// merging makes the streamed response's parts those of the plain one.
func mergeText(dst []*genai.Part, parts []*genai.Part) []*genai.Part {
	for _, p := range parts {
		if p == nil {
			continue
		}
		if n := len(dst); n > 0 && isText(p) && isText(dst[n-1]) && dst[n-1].Thought == p.Thought &&
			(dst[n-1].ThoughtSignature == nil || p.ThoughtSignature == nil) {
			last := *dst[n-1] // a copy: the parts belong to the client's response
			last.Text += p.Text
			if last.ThoughtSignature == nil {
				last.ThoughtSignature = p.ThoughtSignature
			}
			dst[n-1] = &last
			continue
		}
		dst = append(dst, p)
	}
	return dst
}

// isText reports a part that holds text (or nothing) and no other data:
// only text, the thought flag and a thought signature.
func isText(p *genai.Part) bool {
	return p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil &&
		p.ExecutableCode == nil && p.CodeExecutionResult == nil && p.ToolCall == nil && p.ToolResponse == nil &&
		p.VideoMetadata == nil && p.MediaResolution == nil && p.PartMetadata == nil && p.AudioTranscription == nil &&
		p.SpeechMetadata == nil && p.MediaProcessing == ""
}

// partItems converts a candidate's merged parts: a thought becomes a
// reasoning item, text an assistant message, a function call a tool call,
// any other part an opaque item; a signature on a text part or a
// function call becomes a reasoning item just before it.
func partItems(responseID string, parts []*genai.Part) ([]state.Item, error) {
	items := make([]state.Item, 0, len(parts)+1)
	calls := 0
	for i, p := range parts {
		fail := func(err error) error {
			return &DecodeError{Where: "candidates[0].content.parts[" + strconv.Itoa(i) + "]", Err: err}
		}
		if p.Thought && isText(p) {
			it, err := reasoningItem(p.Text, true, p.ThoughtSignature)
			if err != nil {
				return nil, fail(err)
			}
			items = append(items, it)
			continue
		}
		if !isText(p) && p.FunctionCall == nil {
			it, err := opaqueItem(p)
			if err != nil {
				return nil, fail(err)
			}
			items = append(items, it)
			continue
		}
		if p.ThoughtSignature != nil {
			it, err := reasoningItem("", false, p.ThoughtSignature)
			if err != nil {
				return nil, fail(err)
			}
			items = append(items, it)
		}
		if fc := p.FunctionCall; fc != nil {
			if fc.Name == "" {
				return nil, fail(errors.New("a function call without a name"))
			}
			args, err := encodeArgs(fc.Args)
			if err != nil {
				return nil, fail(err)
			}
			id := fc.ID
			if id == "" {
				id = genID(responseID, calls)
			}
			calls++
			items = append(items, state.ToolCall("", id, fc.Name, args))
			continue
		}
		if p.Text != "" {
			items = append(items, state.AssistantMessage("", p.Text))
		}
	}
	return items, nil
}

// encodeArgs writes a call's arguments as JSON text ("{}" for none).
func encodeArgs(args map[string]any) (string, error) {
	if len(args) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(args)
	return string(b), err
}

// genID makes the call ID of the n-th call of a response that came
// without one: from the response's ID, so that a streamed response and a
// plain one give the same IDs, or at random when there is none.
func genID(responseID string, n int) string {
	if responseID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		responseID = hex.EncodeToString(b[:])
	}
	return genIDPrefix + responseID + "-" + strconv.Itoa(n)
}

// usage maps the usage metadata: input counts the prompt and the tool-use
// prompt, output the candidates and the thoughts (as the Responses API's
// output tokens include reasoning), cached the prompt tokens served from
// the cache.
func usage(u *genai.GenerateContentResponseUsageMetadata) state.Usage {
	out := state.Usage{Requests: 1}
	if u != nil {
		out.InputTokens = int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount)
		out.OutputTokens = int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)
		out.ReasoningTokens = int64(u.ThoughtsTokenCount)
		out.CachedTokens = int64(u.CachedContentTokenCount)
	}
	return out
}
