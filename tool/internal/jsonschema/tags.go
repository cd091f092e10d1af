package jsonschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// applyTags sets on s, the schema of field f found at path, what f's tags
// say: the json tag's string option, the `jsonschema:"..."` keys and the
// jsonschema_description tag. It reports whether the field is tagged
// nullable. A key that is unknown, or that cannot apply to the field's
// type, is an [*Error]: the tags are read once, at construction, so a
// mistake shows there rather than as a schema quietly missing a bound. A
// comma in a title or description is kept when what follows it is not a
// key (key=value, required or nullable); elsewhere a comma in a value is
// written "\,".
func applyTags(s *Schema, f field, path string) (nullable bool, err error) {
	if _, ok := f.Tag.Lookup("jsonschema_extras"); ok {
		return false, &Error{Path: path, Reason: "the jsonschema_extras tag is not supported"}
	}
	if d, ok := f.Tag.Lookup("jsonschema_description"); ok {
		s.Description = d
	}
	if hasOption(f.opts, "string") && (s.Type == "integer" || s.Type == "number" || s.Type == "boolean") {
		s.Type = "string" // encoding/json writes the value quoted
	}
	var text *string // the title or description last set, which a comma continues
	for _, kv := range splitTag(f.Tag.Get("jsonschema")) {
		key, val, hasVal := strings.Cut(kv, "=")
		switch {
		case kv == "":
		case !hasVal && key == "required": // every property is required already
		case !hasVal && key == "nullable":
			nullable = true
		case !hasVal && text != nil:
			*text += "," + kv // "description=City name, e.g. Oslo"
		case !hasVal:
			err = fmt.Errorf("unknown jsonschema tag key %q", key)
		case key == "title":
			s.Title, text = val, &s.Title
		case key == "description":
			s.Description, text = val, &s.Description
		default:
			text = nil
			err = setKey(s, key, val)
		}
		if err != nil {
			return false, &Error{Path: path, Reason: err.Error()}
		}
	}
	return nullable, nil
}

// keys are the tag keys with a value that some type has.
var keys = map[string]bool{
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"enum": true, "default": true, "example": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "uniqueItems": true,
}

// setKey sets the keyword key of s to val, by s's type.
func setKey(s *Schema, key, val string) error {
	if !keys[key] {
		return fmt.Errorf("unknown jsonschema tag key %q", key)
	}
	switch s.Type {
	case "string":
		return stringKey(s, key, val)
	case "integer", "number":
		return numberKey(s, key, val)
	case "boolean":
		return boolKey(s, key, val)
	case "array":
		return arrayKey(s, key, val)
	}
	return notFor(key, s)
}

func stringKey(s *Schema, key, val string) error {
	switch key {
	case "minLength":
		return setUint(&s.MinLength, key, val)
	case "maxLength":
		return setUint(&s.MaxLength, key, val)
	case "pattern":
		s.Pattern = val
	case "format":
		s.Format = val
	case "enum":
		s.Enum = append(s.Enum, val)
	case "default":
		s.Default = val
	case "example":
		s.Examples = append(s.Examples, val)
	default:
		return notFor(key, s)
	}
	return nil
}

func numberKey(s *Schema, key, val string) error {
	var dst *json.Number
	switch key {
	case "minimum":
		dst = &s.Minimum
	case "maximum":
		dst = &s.Maximum
	case "exclusiveMinimum":
		dst = &s.ExclusiveMinimum
	case "exclusiveMaximum":
		dst = &s.ExclusiveMaximum
	case "multipleOf":
		dst = &s.MultipleOf
	case "enum", "default", "example":
	default:
		return notFor(key, s)
	}
	n := json.Number(val)
	if _, err := n.Float64(); err != nil {
		return fmt.Errorf("jsonschema tag key %s: %q is not a number", key, val)
	}
	switch key {
	case "enum":
		s.Enum = append(s.Enum, n)
	case "default":
		s.Default = n
	case "example":
		s.Examples = append(s.Examples, n)
	default:
		*dst = n
	}
	return nil
}

func boolKey(s *Schema, key, val string) error {
	if key != "default" {
		return notFor(key, s)
	}
	b, err := strconv.ParseBool(val)
	if err != nil {
		return fmt.Errorf("jsonschema tag key default: %q is not a boolean", val)
	}
	s.Default = b
	return nil
}

// arrayKey sets an array keyword on s, or, for a key arrays do not have,
// the keyword of its items, which are strings, numbers or booleans.
func arrayKey(s *Schema, key, val string) error {
	switch key {
	case "minItems":
		return setUint(&s.MinItems, key, val)
	case "maxItems":
		return setUint(&s.MaxItems, key, val)
	case "uniqueItems":
		u, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("jsonschema tag key uniqueItems: %q is not a boolean", val)
		}
		s.UniqueItems = u
	case "default":
		d, _ := s.Default.([]any)
		s.Default = append(d, val)
	case "format":
		s.Items.Format = val
	case "pattern":
		s.Items.Pattern = val
	default:
		switch s.Items.Type {
		case "string", "integer", "number", "boolean":
			return setKey(s.Items, key, val)
		}
		return notFor(key, s)
	}
	return nil
}

func setUint(dst **uint64, key, val string) error {
	n, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return fmt.Errorf("jsonschema tag key %s: %q is not a count", key, val)
	}
	*dst = &n
	return nil
}

func notFor(key string, s *Schema) error {
	what := "a value of any type"
	if s.Type != "" {
		what = "type " + s.Type
	}
	return fmt.Errorf("jsonschema tag key %q does not apply to %s", key, what)
}

// splitTag splits a jsonschema tag at its commas, except those written
// "\,", which stay in the value as ",".
func splitTag(tag string) []string {
	parts := strings.Split(tag, ",")
	out := parts[:1]
	for _, p := range parts[1:] {
		if last := out[len(out)-1]; strings.HasSuffix(last, `\`) {
			out[len(out)-1] = last[:len(last)-1] + "," + p
			continue
		}
		out = append(out, p)
	}
	return out
}

// hasOption reports whether a json tag's options (after the name) hold opt.
func hasOption(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}
