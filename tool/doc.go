// Package tool builds typed function tools from Go funcs.
//
// [Func] turns a func whose input is a struct into a [pipeline.Tool]: the
// tool's name and description, the JSON schema of its arguments (reflected
// once, at construction, from the struct) and the decoding and validation
// of the arguments the model sends.
//
//	type WeatherArgs struct {
//		City string `json:"city" jsonschema:"description=City name"`
//		Days int    `json:"days" jsonschema:"minimum=1,maximum=7"`
//	}
//
//	weather := tool.Func("get_weather", "Forecast for a city.",
//		func(ctx context.Context, in WeatherArgs) (string, error) {
//			return forecast(ctx, in.City, in.Days)
//		})
//	agent := &pipeline.Agent{Name: "assistant", Model: m, Tools: []pipeline.Tool{weather}}
//
// # Schema
//
// The schema is strict-mode compatible whenever the input type allows it:
// every object lists all its properties as required and sets
// additionalProperties to false, nothing is referenced through $ref or
// $defs, and a pointer field is nullable (anyOf the value and null), which
// is how an optional argument is written. Input types with maps or
// interface values cannot be described strictly; the tool's
// [pipeline.ToolSpec] then reports Strict false. Recursive input types are
// refused at construction.
//
// The schema follows encoding/json: a property per field encoding/json
// writes, named by the json tag (or the field's name), the fields of an
// embedded struct without a name flattened into it, json:"-" fields left
// out, a number or boolean field tagged ",string" a string. Integers are "integer", floats
// "number"; a slice or array is an array (a Go array bounded to its
// length), []byte a base64 string, time.Time a date-time string, url.URL a
// uri string, net.IP an ipv4 string, a map an object whose values follow
// its value type (keys of digits for an integer key). An interface value
// or json.RawMessage accepts any value.
//
// A `jsonschema:"..."` tag adds to a field's schema, its keys separated by
// commas (write "\," for a comma inside a value, except in a title or a
// description, where a comma not followed by a key is kept):
//
//   - any field: description=..., title=..., nullable (null is also
//     accepted), required (every property is required already), and "-" as
//     the first key to leave the field out;
//   - strings: minLength=, maxLength=, pattern=, format=, enum= (once per
//     value), default=, example=;
//   - integers and numbers: minimum=, maximum=, exclusiveMinimum=,
//     exclusiveMaximum=, multipleOf=, enum=, default=, example=;
//   - booleans: default=;
//   - slices and arrays: minItems=, maxItems=, uniqueItems=, default=, and
//     the keys of their items' type when those are strings, numbers or
//     booleans (`jsonschema:"minItems=1,enum=a,enum=b"` on a []string).
//
// The jsonschema_description tag sets the description too. A key the
// field's type does not have, an unknown key, a value that is not a number
// where one is needed, a channel, func or complex field, or a type that is
// not a struct or contains itself is a [*TypeError] wrapping
// [ErrUnsupportedType]: [Func] panics with its message, [Output] and
// [Input] return it.
//
// # Decoding
//
// Arguments are validated against the schema before they are decoded, so
// that a bad value is reported with its JSON path. Unknown properties,
// missing properties, wrong types, nulls where no null is allowed, values
// out of an enum or a bound, and integers that do not fit their Go type
// yield a [*pipeline.ArgumentError] naming the tool, the call and the path
// (such as "items[2].qty"); a syntax error names the byte offset. The
// runner reports it to the model or ends the run with it (see
// [pipeline.WithInvalidCallsToModel]). Decoding never panics.
//
// # Output
//
// A func returning string gives the model that string. A func returning
// [Content] gives it content parts: text, images and files, such as a
// chart the tool drew or a PDF it fetched; this holds for [Func] and
// [Text] alike. Any other output type of a Func is marshalled to JSON.
//
// # Idempotency keys and errors
//
// A func gets its arguments; [CallFromContext] gives it the call it
// serves, whose [pipeline.ToolCall.IdempotencyKey] (run ID and call ID) a
// tool with external effects passes on, such as in an Idempotency-Key
// header, so that a call run again after a crash or an aborted run is
// recognised as the same call:
//
//	charge := tool.Func("charge", "Charges the card.",
//		func(ctx context.Context, in ChargeArgs) (string, error) {
//			call, _ := tool.CallFromContext(ctx)
//			return payments.Charge(ctx, in.Cents, call.IdempotencyKey())
//		})
//
// The error a func returns becomes the call's output, which the model
// sees, unless the runner has pipeline.WithToolErrorsAbort; either way the
// typed error stays readable (pipeline.ToolResult.Err,
// pipeline.ToolCallEnded.Err, or the run's *pipeline.ToolError). The
// package doc of pipeline says more under "Tool errors".
//
// # Output types
//
// [Output] makes a Go type an agent's output type ([pipeline.Agent.Output]),
// with the same schema generation and tags as [Func]'s input, always
// strict: a type strict mode cannot describe is refused with a
// [*StrictError] naming the field, unless [AllowNonStrict] is given. The
// final output is validated and decoded as arguments are, and read with
// [pipeline.OutputAs]:
//
//	type Verdict struct {
//		Label string `json:"label" jsonschema:"enum=spam,enum=ham"`
//	}
//	agent := &pipeline.Agent{Name: "classifier", Model: m, Output: tool.MustOutput[Verdict]()}
//	res, err := runner.Run(ctx, agent, pipeline.UserInput(mail))
//	v, err := pipeline.OutputAs[Verdict](res)
//
// An optional field is a pointer: strict mode lists every property as
// required, so its property is nullable (anyOf the value and null), and
// the model sends it all the same, as null when it has no value; a reply
// that leaves it out is a [*pipeline.OutputError] ("missing property").
// The schema's name, which the model sees, is the Go type's name
// (exported or not, a generic type's without its arguments, characters
// the API refuses replaced by "_", at most 64 bytes; "output" for an
// unnamed type), unless [OutputName] sets one.
//
// A Func tool reports its result type ([pipeline.ResultTyper]), so a
// terminal tool whose result cannot be its agent's output type is refused
// before a run starts.
//
// # Typed handoffs
//
// [Input] makes a Go type a handoff's input type ([pipeline.Handoff.Input]),
// with [Func]'s schema and decoding, and [Handoff] builds the handoff with a
// typed callback that runs before the target agent does:
//
//	toRefunds := tool.Handoff(refunds, func(ctx context.Context, r Refund) error {
//		return tickets.Open(ctx, r.Order)
//	})
//	triage := &pipeline.Agent{Name: "triage", Model: m, Handoffs: []pipeline.Handoff{toRefunds}}
//
// # Approval
//
// [NeedsApproval] and [NeedsApprovalFunc] make the tool a
// [pipeline.ApprovalRequirer], which the approval middleware asks before
// the call runs.
package tool
