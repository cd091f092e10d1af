package openai

import (
	"fmt"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/pipeline"
)

// The structured output of an agent ([pipeline.ModelCall].Output) is sent
// as a json_schema format: the Responses API's text.format, and Chat
// Completions' response_format. A call without one sends neither, so the
// model answers in text.

// checkOutput reports an output spec the API would refuse.
func checkOutput(o *pipeline.OutputSpec) error {
	if !jsonscan.Valid(o.Schema) {
		return fmt.Errorf("openai: output %q: schema is not valid JSON", o.Name)
	}
	return nil
}

// appendTextFormat appends the Responses API text config for o.
func appendTextFormat(dst []byte, o *pipeline.OutputSpec) []byte {
	dst = append(dst, `{"format":`...)
	dst = appendSchemaFormat(dst, o, true)
	return append(dst, '}')
}

// appendResponseFormat appends the Chat Completions response_format for o.
func appendResponseFormat(dst []byte, o *pipeline.OutputSpec) []byte {
	dst = append(dst, `{"type":"json_schema","json_schema":`...)
	dst = appendSchemaFormat(dst, o, false)
	return append(dst, '}')
}

// appendSchemaFormat appends the json_schema object: with its type inline
// for the Responses API, without for Chat Completions.
func appendSchemaFormat(dst []byte, o *pipeline.OutputSpec, typed bool) []byte {
	dst = append(dst, '{')
	if typed {
		dst = append(dst, `"type":"json_schema",`...)
	}
	dst = append(dst, `"name":`...)
	dst = jsonw.AppendString(dst, o.Name)
	if o.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.AppendString(dst, o.Description)
	}
	dst = append(dst, `,"schema":`...)
	dst = append(dst, o.Schema...)
	if o.Strict {
		dst = append(dst, `,"strict":true}`...)
	} else {
		dst = append(dst, `,"strict":false}`...)
	}
	return dst
}
