package tool

import "github.com/turnkit/turnkit/state"

// Content is a tool's output made of content parts: text, images and
// files, built with [state.TextPart], [state.ImageURL], [state.ImageFile],
// [state.FileID], [state.FileURL] and [state.FileData]. A [Func] whose
// func returns Content answers the model with the parts, in order (a
// function_call_output whose output is a list of parts, see
// [state.ToolOutputContent]), where a string would be text only:
//
//	chart := tool.Func("plot", "Plots a series as a PNG chart.",
//		func(ctx context.Context, in PlotArgs) (tool.Content, error) {
//			png, err := plot(in.Series)
//			if err != nil {
//				return nil, err
//			}
//			return tool.Content{
//				state.TextPart("The chart:"),
//				state.ImageURL("data:image/png;base64,"+base64.StdEncoding.EncodeToString(png), "auto"),
//			}, nil
//		})
//
// The parts' text, joined, is the call's text output: what guardrails and
// logs see, and the final output when the tool ends the run. An empty
// Content is an empty text output. The Responses API takes images and
// files in a tool's output; the Chat Completions adapter refuses them with
// a typed error before the request (its tool messages take text only).
// The parts are stored, checkpointed and replayed to the model with the
// run, like any item.
type Content []state.ContentPart
