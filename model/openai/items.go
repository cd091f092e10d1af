package openai

import "github.com/turnkit/turnkit/state"

// hostedTypes lists the output item types that are calls of tools the
// Responses API defines: the adapter records them as
// [state.KindHostedCall]. They are complete as the model sent them:
// the API ran the tool (web search, file search, code interpreter, image
// generation, remote MCP), or the call is one turnkit does not execute
// (computer use, shell, apply patch), and no output of turnkit's answers
// them. Every other type the adapter does not read itself becomes a
// [state.KindOpaque] item: stored, replayed and checkpointed as sent.
var hostedTypes = map[string]bool{
	"web_search_call":       true,
	"file_search_call":      true,
	"code_interpreter_call": true,
	"image_generation_call": true,
	"mcp_call":              true,
	"mcp_list_tools":        true,
	"computer_call":         true,
	"local_shell_call":      true,
	"shell_call":            true,
	"apply_patch_call":      true,
	"tool_search_call":      true,
}

// typedKind returns the kind of an output item of type typ that is not a
// message, a function call or a reasoning item.
func typedKind(typ string) state.Kind {
	if hostedTypes[typ] {
		return state.KindHostedCall
	}
	return state.KindOpaque
}
