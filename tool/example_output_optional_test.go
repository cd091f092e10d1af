package tool_test

import (
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/tool"
)

// An optional field of an output type is a pointer. Strict mode lists
// every property as required, so the pointer's property is nullable: the
// model still sends it, as null when it has no value, and a reply that
// leaves it out does not decode. The schema's default name is the Go
// type's name, exported or not (OutputName sets another).
func ExampleOutput_optionalField() {
	type order struct {
		Customer string  `json:"customer"`
		Deliver  *string `json:"deliver"` // optional: nullable, still sent
	}
	out := tool.MustOutput[order]()
	spec := out.OutputSpec()
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(spec.Schema, &schema)
	fmt.Println("name:", spec.Name, "strict:", spec.Strict)
	fmt.Println("deliver:", string(schema.Properties["deliver"]))
	fmt.Println("required:", schema.Required)

	v, err := out.Decode(`{"customer":"Ada","deliver":null}`)
	fmt.Println(v.(order).Deliver == nil, err)
	_, err = out.Decode(`{"customer":"Ada"}`)
	fmt.Println(err)
	// Output:
	// name: order strict: true
	// deliver: {"anyOf":[{"type":"string"},{"type":"null"}]}
	// required: [customer deliver]
	// true <nil>
	// pipeline: agent "" final output: deliver: missing property
}
