package jsonscan

// ValidMaxDepth is the deepest nesting encoding/json reads, and so the
// deepest [Valid] accepts.
const ValidMaxDepth = 10000

// Valid reports whether b is one JSON value, with optional whitespace
// around it, exactly as json.Valid does (nesting deeper than
// [ValidMaxDepth] refused, object keys of any kind accepted), with the
// scanner's primitives: one loop per token where encoding/json steps a
// function per byte.
func Valid(b []byte) bool {
	s := Scanner{B: b}
	s.SkipWS()
	return s.valid(0) && s.End()
}

// valid reads one value, nested at depth, whitespace before it skipped.
func (s *Scanner) valid(depth int) bool {
	switch s.Peek() {
	case '{':
		if depth >= ValidMaxDepth {
			return false
		}
		s.I++
		s.SkipWS()
		if s.Eat('}') {
			return true
		}
		for {
			if _, _, ok := s.Str(); !ok {
				return false
			}
			s.SkipWS()
			if !s.Eat(':') {
				return false
			}
			s.SkipWS()
			if !s.valid(depth + 1) {
				return false
			}
			s.SkipWS()
			if s.Eat('}') {
				return true
			}
			if !s.Eat(',') {
				return false
			}
			s.SkipWS()
		}
	case '[':
		if depth >= ValidMaxDepth {
			return false
		}
		s.I++
		s.SkipWS()
		if s.Eat(']') {
			return true
		}
		for {
			if !s.valid(depth + 1) {
				return false
			}
			s.SkipWS()
			if s.Eat(']') {
				return true
			}
			if !s.Eat(',') {
				return false
			}
			s.SkipWS()
		}
	}
	return s.scalar()
}
