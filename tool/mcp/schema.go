package mcp

// strictKeywords are the JSON Schema keywords strict mode accepts.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "description": true,
	"title": true, "$ref": true, "$defs": true, "definitions": true, "$schema": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// strictQualifies reports whether the schema can be used in strict mode:
// an object at the top, every object closed (additionalProperties false)
// and requiring all of its properties, and only keywords strict mode
// accepts, everywhere.
func strictQualifies(root map[string]any) bool {
	if root["type"] != "object" {
		return false
	}
	return strictNode(root, 0)
}

func strictNode(n map[string]any, depth int) bool {
	if depth > 32 {
		return false
	}
	for k := range n {
		if !strictKeywords[k] {
			return false
		}
	}
	if isObjectType(n["type"]) {
		if n["additionalProperties"] != false {
			return false
		}
		props, _ := n["properties"].(map[string]any)
		req, _ := n["required"].([]any)
		if len(req) != len(props) {
			return false
		}
		for _, r := range req {
			name, ok := r.(string)
			if _, found := props[name]; !ok || !found {
				return false
			}
		}
	}
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if m, ok := n[k]; ok {
			sub, ok := m.(map[string]any)
			if !ok {
				return false
			}
			for _, v := range sub {
				if !strictChild(v, depth) {
					return false
				}
			}
		}
	}
	if v, ok := n["items"]; ok && !strictChild(v, depth) {
		return false
	}
	if v, ok := n["anyOf"]; ok {
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, x := range list {
			if !strictChild(x, depth) {
				return false
			}
		}
	}
	return true
}

func strictChild(v any, depth int) bool {
	m, ok := v.(map[string]any)
	return ok && strictNode(m, depth+1)
}

func isObjectType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}
