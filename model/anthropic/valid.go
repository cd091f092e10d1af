package anthropic

// validJSON reports whether b is one JSON value, with optional
// whitespace around it, exactly as json.Valid does (nesting deeper than
// encoding/json's 10 000 levels included), without encoding/json's
// scanner: a step function per byte there, one loop per token here. It
// checks every tool's arguments and parameters in a request and every
// body and event of a response: the largest part of the adapter's own
// time with json.Valid. FuzzValidJSON holds it to json.Valid.
func validJSON(b []byte) bool {
	v := validator{b: b}
	v.ws()
	if !v.value() {
		return false
	}
	v.ws()
	return v.i == len(v.b)
}

// maxDepth is the deepest nesting encoding/json reads.
const maxDepth = 10000

type validator struct {
	b     []byte
	i     int
	depth int
}

func (v *validator) ws() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// value reads one value, whitespace before it read.
func (v *validator) value() bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; c {
	case '{':
		return v.object()
	case '[':
		return v.array()
	case '"':
		return v.str()
	case 't':
		return v.literal("true")
	case 'f':
		return v.literal("false")
	case 'n':
		return v.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return v.number()
		}
		return false
	}
}

func (v *validator) literal(lit string) bool {
	if len(v.b)-v.i < len(lit) || string(v.b[v.i:v.i+len(lit)]) != lit {
		return false
	}
	v.i += len(lit)
	return true
}

// object reads an object from its opening brace.
func (v *validator) object() bool {
	if v.depth++; v.depth > maxDepth {
		return false
	}
	v.i++
	v.ws()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		v.depth--
		return true
	}
	for {
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
			return false
		}
		v.ws()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.ws()
		if !v.value() {
			return false
		}
		v.ws()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.ws()
		case '}':
			v.i++
			v.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array from its opening bracket.
func (v *validator) array() bool {
	if v.depth++; v.depth > maxDepth {
		return false
	}
	v.i++
	v.ws()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		v.depth--
		return true
	}
	for {
		if !v.value() {
			return false
		}
		v.ws()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.ws()
		case ']':
			v.i++
			v.depth--
			return true
		default:
			return false
		}
	}
}

// str reads a string from its opening quote: no control character in
// it, escapes of the eight JSON has or of four hex digits (a lone
// surrogate too: encoding/json reads it as U+FFFD). Bytes of invalid
// UTF-8 are valid, as for json.Valid.
func (v *validator) str() bool {
	b := v.b
	i := v.i + 1
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch c {
		case '"':
			v.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b[i+2:]) < 0 {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
	return false
}

// number reads a number: an optional minus, an integer without leading
// zeros, an optional fraction, an optional exponent.
func (v *validator) number() bool {
	b := v.b
	i := v.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	v.i = i
	return true
}

// digits returns the index past the digits b has from i on.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
