package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStringsRoundTrip checks that the scanner reads back every string
// encoding/json writes, escapes and invalid UTF-8 included, as
// encoding/json reads it.
func TestStringsRoundTrip(t *testing.T) {
	for _, in := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r", "é ü 日本",
		"\u2028\u2029", "<html>&amp;", "emoji 🙂", "nul \x00 byte", "bad \xff utf-8",
	} {
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		s := Scanner{B: data}
		var scratch []byte
		got, ok := s.String(&scratch)
		if !ok || !s.End() {
			t.Fatalf("String(%s): ok=%v end=%v", data, ok, s.End())
		}
		if got != want {
			t.Errorf("String(%s) = %q, want %q", data, got, want)
		}
	}
}

// TestEscapesAsEncodingJSON checks escapes encoding/json never writes but
// reads: \u escapes, surrogate pairs and unpaired surrogates.
func TestEscapesAsEncodingJSON(t *testing.T) {
	for _, data := range []string{`"\u0041\u00e9"`, `"\ud83d\ude42"`, `"\ud83d x"`, `"\ude42"`, `"\/\b\f"`} {
		var want string
		if err := json.Unmarshal([]byte(data), &want); err != nil {
			t.Fatal(err)
		}
		s := Scanner{B: []byte(data)}
		var scratch []byte
		if got, ok := s.String(&scratch); !ok || got != want {
			t.Errorf("String(%s) = %q, %v; want %q", data, got, ok, want)
		}
	}
}

// TestScannerRefuses checks that the scanner refuses what is not JSON.
func TestScannerRefuses(t *testing.T) {
	for _, data := range []string{
		``, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `"unterminated`, `"bad \q escape"`,
		"\"control \x01\"", `01`, `1.`, `1e`, `-`, `tru`, `nul`, `NaN`, `[1 2]`, `{"a":1}}`,
	} {
		s := Scanner{B: []byte(data)}
		if s.Value(0) && s.End() {
			t.Errorf("Value(%q) accepted", data)
		}
		if json.Valid([]byte(data)) {
			t.Errorf("%q is valid JSON: the case tests nothing", data)
		}
	}
}

// TestScannerAccepts checks that the scanner accepts valid JSON and
// consumes all of it.
func TestScannerAccepts(t *testing.T) {
	for _, data := range []string{
		`{}`, `[]`, `{"a":[1,-2.5e3,true,false,null,"s"],"b":{"c":{}}}`, " [ 1 , 2 ] ", `0`, `-0.0E+1`,
	} {
		s := Scanner{B: []byte(data)}
		s.SkipWS()
		if !s.Value(0) || !s.End() {
			t.Errorf("Value(%q) refused", data)
		}
	}
}

// TestScannerDepth checks that nesting beyond MaxDepth is refused, not
// recursed into.
func TestScannerDepth(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	s := Scanner{B: []byte(deep)}
	if s.Value(0) {
		t.Errorf("nesting of %d accepted, limit %d", MaxDepth+1, MaxDepth)
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	s = Scanner{B: []byte(ok)}
	if !s.Value(0) || !s.End() {
		t.Errorf("nesting of %d refused, limit %d", MaxDepth, MaxDepth)
	}
}

// TestInt64 checks integers against the bit size they must fit in.
func TestInt64(t *testing.T) {
	for _, c := range []struct {
		data string
		bits int
		want int64
		ok   bool
	}{
		{"0", 64, 0, true}, {"7,", 64, 7, true}, {"7}", 64, 7, true}, {"7 ", 64, 7, true}, {"-7,", 64, -7, true},
		{"7.5,", 64, 0, false}, {"7e1,", 64, 0, false}, {"7E1,", 64, 0, false}, {"0.5,", 64, 0, false}, {"71,", 64, 71, true},
		{"42", 64, 42, true}, {"-7", 64, -7, true}, {"9223372036854775807", 64, 1<<63 - 1, true},
		{"9223372036854775808", 64, 0, false}, {"2147483648", 32, 0, false}, {"1.0", 64, 0, false}, {"1e2", 64, 0, false},
	} {
		s := Scanner{B: []byte(c.data)}
		n, ok := s.Int64(c.bits)
		if ok != c.ok || ok && n != c.want {
			t.Errorf("Int64(%s, %d) = %d, %v; want %d, %v", c.data, c.bits, n, ok, c.want, c.ok)
		}
		if end := len(c.data) - len(strings.TrimLeft(c.data, "-0123456789")); ok && s.I != end {
			t.Errorf("Int64(%s) stopped at %d, want %d", c.data, s.I, end)
		}
	}
}

// TestMembersAndElements checks the object and array walks.
func TestMembersAndElements(t *testing.T) {
	s := Scanner{B: []byte(`{"a": [1, 2, 3], "b" : "x"}`)}
	var keys []string
	var n int
	ok := s.Members(func(key []byte) bool {
		keys = append(keys, string(key))
		if string(key) == "a" {
			return s.Elements(func() bool { n++; return s.Value(1) })
		}
		return s.Value(1)
	})
	if !ok || !s.End() || strings.Join(keys, ",") != "a,b" || n != 3 {
		t.Errorf("walk: ok=%v keys=%v elements=%d", ok, keys, n)
	}
}

// TestValidDepth: Valid reads nesting as deep as encoding/json does, and
// refuses one level more, as json.Valid does.
func TestValidDepth(t *testing.T) {
	for _, depth := range []int{ValidMaxDepth, ValidMaxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			b := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := Valid(b), json.Valid(b); got != want {
				t.Errorf("Valid of %d levels of %s = %v, json.Valid %v", depth, open, got, want)
			}
		}
	}
}

// FuzzValid: Valid agrees with json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{``, ` `, `0`, `-0.5e+3`, `01`, `1.`, `1e`, `-`, `.5`, `"\u12"`, `"\ud800"`, "\"\x01\"", "\"\xff\"", `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `{1:2}`, `[1 2]`, ` {"a":[true,false,null,{"b":"c\"\\\/\b\f\n\r\t"}]} `, `nul`, `truex`, `[] []`, `{"\u00e9\n":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// FuzzAppendUnquoted: a string the scanner reads unescapes as
// encoding/json decodes it.
func FuzzAppendUnquoted(f *testing.F) {
	for _, s := range []string{`""`, `"a\u00e9\ud83d\ude42"`, `"\ud83d x"`, `"\ude42\n"`, "\"\xff\xe2\x80\xa8<\"", `"\/\b\f\r\t\"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Scanner{B: b}
		var scratch []byte
		got, ok := s.String(&scratch)
		if !ok || !s.End() {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("String(%q) read what encoding/json refuses: %v", b, err)
		}
		if got != want {
			t.Fatalf("String(%q) = %q, encoding/json %q", b, got, want)
		}
	})
}

// TestStrReadsEveryByteAtEveryPosition places each byte value at each
// position of a string, in the bytes Str steps through one at a time and
// in those it reads eight at a time, and checks Str against
// encoding/json: a string Str reads to the end of the input is one
// encoding/json accepts, with the same value; one it refuses or ends
// early (at a quote) is not a whole JSON string; and the flags say what
// the byte is.
func TestStrReadsEveryByteAtEveryPosition(t *testing.T) {
	for c := range 256 {
		for at := range 21 {
			body := []byte("abcdefghijklmnopqrstu")
			body[at] = byte(c)
			in := append(append([]byte{'"'}, body...), '"')
			var want string
			valid := json.Unmarshal(in, &want) == nil
			s := Scanner{B: in}
			q, flags, ok := s.Str()
			whole := ok && s.I == len(in)
			if whole != valid {
				t.Fatalf("byte %#x at %d: Str read the whole string %v, encoding/json accepts it %v", c, at, whole, valid)
			}
			if !whole {
				continue
			}
			if got := string(AppendUnquoted(nil, q, flags)); got != want {
				t.Fatalf("byte %#x at %d: Str read %q, encoding/json %q", c, at, got, want)
			}
			var wantFlags uint8
			switch {
			case c == '<' || c == '>' || c == '&':
				wantFlags = StrHTML
			case c == '\\':
				wantFlags = StrEscaped
			case c >= 0x80:
				wantFlags = StrNonASCII
			}
			if flags != wantFlags {
				t.Fatalf("byte %#x at %d: flags %b, want %b", c, at, flags, wantFlags)
			}
		}
	}
}

// TestKeyAsStr checks the key fast path against Str: the same key, the
// same refusals (a key encoding/json unescapes or folds, a bad one), the
// same position after it and the same document flags.
func TestKeyAsStr(t *testing.T) {
	for _, data := range []string{
		`"seq":1`, `"":1`, `"a":1`, `"session_watermark":0`, `"a<b":1`, `"a&b>":1`,
		`"a\"b":1`, `"a\u00e9":1`, `"é":1`, "\"a\x01\":1", `"unterminated`, `"abc`, `x":1`, ``,
	} {
		k := Scanner{B: []byte(data)}
		key, ok := k.key()
		s := Scanner{B: []byte(data)}
		want, flags, wantOK := s.Str()
		wantOK = wantOK && flags&(StrEscaped|StrNonASCII) == 0
		if ok != wantOK || ok && (string(key) != string(want) || k.I != s.I || k.Flags != s.Flags) {
			t.Errorf("key(%q) = %q, %v at %d flags %b; Str: %q, %v at %d flags %b",
				data, key, ok, k.I, k.Flags, want, wantOK, s.I, s.Flags)
		}
	}
}

// TestObject checks Object's in-place key match against Members: the
// same members in the same order with the same values, a key in the
// expected order reported by position and any other as scanned, and the
// same refusals.
func TestObject(t *testing.T) {
	keys := []Key{MakeKey("a"), MakeKey("b"), MakeKey("c")}
	pos := map[string]int{"a": 0, "b": 1, "c": 2}
	for _, c := range []struct {
		data    string
		inPlace string // the members matched in place
	}{
		{`{"a":1,"b":2,"c":3}`, "abc"},
		{`{"a":1,"c":3}`, "ac"},       // b left out: c, the key after it, in place
		{`{"b":2,"c":3}`, "bc"},       // a left out: b in place, then c
		{`{"c":3,"b":2}`, ""},         // two left out: c scanned, then b before it
		{`{"c":3,"a":1}`, ""},         // out of order
		{`{ "a" : 1 , "b":2 }`, "b"},  // whitespace before the colon: scanned
		{`{"a":1, "b":2}`, "ab"},      // whitespace after the comma: skipped first
		{`{"x":1,"a":2}`, "a"},        // an unknown key, then the first
		{`{"a":1,"x":2,"b":3}`, "ab"}, // an unknown key between: b still looked for
		{`{"a":1,"x":2,"y":3,"b":4,"c":5}`, "abc"},
		{`{"b":1,"x":2,"c":3}`, "bc"}, // b in place, the unknown key, c after b in place
		{`{"a\u0062":1}`, ""},         // an escaped key: refused, as by Members
		{`{"a":1,}`, "a"},             // refused
		{`{"a":1 "b":2}`, "a"},        // refused
		{`{}`, ""},
		{`{`, ""},
	} {
		var got, want []string
		inPlace := ""
		s := Scanner{B: []byte(c.data)}
		okAt := true
		o := s.Object(keys)
		for o.Next(&s) {
			key := o.Key
			if o.Key == nil {
				inPlace += string("abc"[o.Field])
				key = []byte(keys[o.Field].Name())
			} else if p, known := pos[string(key)]; known != (o.Field >= 0) || known && p != o.Field {
				t.Errorf("%s: key %q looked up at %d", c.data, key, o.Field)
			}
			v, _, ok := s.Number()
			got = append(got, string(key)+"="+string(v))
			if !ok {
				okAt = false
				break
			}
		}
		okAt = okAt && o.Done()
		r := Scanner{B: []byte(c.data)}
		ok := r.Members(func(key []byte) bool {
			v, _, ok := r.Number()
			want = append(want, string(key)+"="+string(v))
			return ok
		})
		if okAt != ok || strings.Join(got, ",") != strings.Join(want, ",") || ok && s.I != r.I {
			t.Errorf("%s: Object %v %v at %d; Members %v %v at %d", c.data, okAt, got, s.I, ok, want, r.I)
		}
		if inPlace != c.inPlace {
			t.Errorf("%s: matched in place %q, want %q", c.data, inPlace, c.inPlace)
		}
	}
}

// TestKeyPrefixOf checks Key's word comparison against strings.HasPrefix
// for keys of every length up to past two words, on inputs shorter and
// longer than a key, equal to it or differing from it in any one byte.
func TestKeyPrefixOf(t *testing.T) {
	for n := 1; n <= 20; n++ {
		name := strings.Repeat("k", n-1) + "z"
		k := MakeKey(name)
		if k.String() != `"`+name+`":` {
			t.Fatalf("MakeKey(%q) = %q", name, k.String())
		}
		for _, tail := range []string{"", "1", `"x"}`, strings.Repeat(" ", 20)} {
			in := k.String() + tail
			inputs := []string{in}
			for i := range len(in) {
				inputs = append(inputs, in[:i], in[:i]+"?"+in[i+1:])
			}
			for _, b := range inputs {
				if got, want := k.prefixOf([]byte(b)), strings.HasPrefix(b, k.String()); got != want {
					t.Errorf("key %q prefixOf(%q) = %v, want %v", k.String(), b, got, want)
				}
			}
		}
	}
}
