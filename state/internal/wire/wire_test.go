package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// testRun is the run object with small stand-ins for package state's
// types: the schema is generic over them.
type testRun = Run[string, struct {
	Start int64 `json:"start"`
}, json.RawMessage, json.RawMessage, json.RawMessage, struct {
	Requests int64 `json:"requests"`
}, json.RawMessage]

// TestSchemaRoundTrip checks that a run object goes through encoding/json
// unchanged, with the members the schema names.
func TestSchemaRoundTrip(t *testing.T) {
	in := testRun{
		ID: "r1", Agent: "a", Turn: 2, NextSeq: 3,
		Items:     []Item[string]{{Seq: 1, Kind: "user_message", Raw: json.RawMessage(`{"content":"hi"}`)}, {Seq: 2, Kind: "tool_output", Name: "f", Raw: json.RawMessage(`{}`)}},
		Pending:   []json.RawMessage{json.RawMessage(`{"call_id":"c"}`)},
		Extension: map[string]json.RawMessage{"x": json.RawMessage(`1`)},
		Finished:  true, Final: "done",
	}
	in.Response.Start = 1
	in.Usage.Requests = 4
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out testRun
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	for _, member := range []string{`"id":"r1"`, `"next_seq":3`, `"final_output":"done"`, `"name":"f"`, `"response":{"start":1}`} {
		if !strings.Contains(string(data), member) {
			t.Errorf("%s lacks %s", data, member)
		}
	}
	if strings.Contains(string(data), `"session_id"`) {
		t.Errorf("%s has an empty omitempty member", data)
	}
}

// TestFields checks the field table derived from the tags.
func TestFields(t *testing.T) {
	fs := FieldsOf(reflect.TypeFor[testRun]())
	if got := fs.Name("NextSeq"); got != "next_seq" {
		t.Errorf("Name(NextSeq) = %q", got)
	}
	id := fs.List[fs.Pos("ID")]
	if !id.Required || id.OmitEmpty {
		t.Errorf("ID: %+v, want required", id)
	}
	if f := fs.List[fs.Pos("SessionID")]; !f.OmitEmpty || f.Required {
		t.Errorf("SessionID: %+v, want omitempty", f)
	}
	if fs.Required != 1<<fs.Pos("ID")|1<<fs.Pos("NextSeq") {
		t.Errorf("Required = %b, want ID and NextSeq", fs.Required)
	}
	defer func() {
		if recover() == nil {
			t.Error("Pos of a missing field did not panic")
		}
	}()
	fs.Pos("Missing")
}

// TestFieldsRefuseUntagged checks that a shape member without a JSON name
// is refused when the table is made.
func TestFieldsRefuseUntagged(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FieldsOf accepted an untagged field")
		}
	}()
	FieldsOf(reflect.TypeFor[struct{ A int }]())
}

// TestFieldsRefuseWide checks that a shape with more members than a
// FieldSet holds is refused when the table is made: the fast paths would
// lose track of the members past the 32nd.
func TestFieldsRefuseWide(t *testing.T) {
	fields := make([]reflect.StructField, maxFields+1)
	for i := range fields {
		name := fmt.Sprintf("F%d", i)
		fields[i] = reflect.StructField{Name: name, Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + name + `"`)}
	}
	FieldsOf(reflect.StructOf(fields[:maxFields])) // as many as it holds
	defer func() {
		if recover() == nil {
			t.Error("FieldsOf accepted a shape of 33 members")
		}
	}()
	FieldsOf(reflect.StructOf(fields))
}

// TestDecodedRefusesMissingRequired checks the decode-and-fill path: a
// missing required member is named, a zero one is not missing.
func TestDecodedRefusesMissingRequired(t *testing.T) {
	rt := reflect.TypeFor[testRun]()
	fs := FieldsOf(rt)
	for _, c := range []struct{ data, missing string }{
		{`{"id":"r","next_seq":0}`, ""},
		{`{"next_seq":1}`, "id"},
		{`{"id":"r"}`, "next_seq"},
		{`{"id":null,"next_seq":1}`, "id"},
	} {
		dec := reflect.New(Decoded(rt))
		if err := json.Unmarshal([]byte(c.data), dec.Interface()); err != nil {
			t.Fatal(err)
		}
		var out testRun
		if got := Fill(&out, dec.Elem(), fs); got != c.missing {
			t.Errorf("Fill(%s) missing %q, want %q", c.data, got, c.missing)
		}
	}
}

// TestRawKeepsElements checks that Raw keeps lists of objects as raw
// elements, so that each can be decoded, and blamed, on its own.
func TestRawKeepsElements(t *testing.T) {
	raw := Raw(reflect.TypeFor[testRun]())
	f, _ := raw.FieldByName("Items")
	if f.Type != reflect.TypeFor[[]json.RawMessage]() {
		t.Errorf("Raw Items is %v", f.Type)
	}
	f, _ = raw.FieldByName("Response")
	if f.Type != reflect.TypeFor[json.RawMessage]() {
		t.Errorf("Raw Response is %v", f.Type)
	}
	f, _ = raw.FieldByName("ID")
	if f.Type != reflect.TypeFor[*string]() {
		t.Errorf("Raw ID is %v", f.Type)
	}
}

// TestFoldedKey checks that a key matching a field only by case folding
// is found and named, and that exact keys pass.
func TestFoldedKey(t *testing.T) {
	rt := reflect.TypeFor[testRun]()
	for _, c := range []struct{ data, path string }{
		{`{"id":"r","next_seq":1,"items":[{"seq":1,"kind":"k","raw":{}}]}`, ""},
		{`{"ID":"r"}`, "$.ID"},
		{`{"id":"r","items":[{"seq":1},{"SEQ":2}]}`, "$.items[1].SEQ"},
		{`{"id":"r","extension":{"ID":1}}`, ""}, // a map's keys are not fields
	} {
		path, off := FoldedKey([]byte(c.data), rt, "$")
		if path != c.path {
			t.Errorf("FoldedKey(%s) = %q, want %q", c.data, path, c.path)
		}
		if (off != 0) != (c.path != "") {
			t.Errorf("FoldedKey(%s) offset %d", c.data, off)
		}
	}
}

// TestPathAt checks the path of the value enclosing an offset.
func TestPathAt(t *testing.T) {
	data := []byte(`{"run":{"items":[{"seq":1},{"seq":"x"}]}}`)
	off := int64(strings.Index(string(data), `"x"`))
	if got := PathAt(data, off, "$"); got != "$.run.items[1].seq" {
		t.Errorf("PathAt = %q", got)
	}
	if got := PathAt(data, 0, "$"); got != "$" {
		t.Errorf("PathAt(0) = %q", got)
	}
	deep := []byte(strings.Repeat(`{"a":`, 2*maxPathDepth) + "1")
	if got := PathAt(deep, int64(len(deep)), "$"); !strings.HasSuffix(got, "…") || len(got) > 4*maxPathDepth+8 {
		t.Errorf("PathAt of deep nesting = %q, want it cut short", got)
	}
}

// TestDelegateStrict checks that a delegated value is decoded strictly.
func TestDelegateStrict(t *testing.T) {
	type shape struct {
		A int `json:"a"`
	}
	for _, c := range []struct {
		data string
		ok   bool
	}{{`{"a":1}`, true}, {`{"A":1}`, false}, {`{"b":1}`, false}, {`null`, true}, {`{"a":"x"}`, false}} {
		var v shape
		s := jsonscan.Scanner{B: []byte(c.data)}
		if got := Delegate(&s, &v, false); got != c.ok {
			t.Errorf("Delegate(%s) = %v, want %v", c.data, got, c.ok)
		}
	}
}

// TestFieldSet checks repeated and folded keys.
func TestFieldSet(t *testing.T) {
	names := []string{"type", "role"}
	var fs FieldSet
	if i, ok := fs.Field([]byte("role"), names); i != 1 || !ok {
		t.Errorf("first role: %d, %v", i, ok)
	}
	if _, ok := fs.Field([]byte("role"), names); ok {
		t.Error("a repeated key passed")
	}
	if i, ok := fs.Field([]byte("type"), names); i != 0 || !ok {
		t.Errorf("type after role (the search wraps around): %d, %v", i, ok)
	}
	if _, ok := fs.Field([]byte("TYPE"), names); ok {
		t.Error("a folded key passed")
	}
	if i, ok := fs.Field([]byte("other"), names); i != -1 || !ok {
		t.Errorf("unknown key: %d, %v", i, ok)
	}
}

// TestObjectFields: a walk of an object of a shape's members finds every
// member at its position in List, and any other key at -1, in whatever
// order the keys come.
func TestObjectFields(t *testing.T) {
	t.Parallel()
	type shape struct {
		A int `json:"a"`
		B int `json:"bb,omitempty"`
		C int `json:"c"`
		D int `json:"dd"`
	}
	fs := FieldsOf(reflect.TypeFor[shape]())
	want := map[string]int{"a": 0, "bb": 1, "c": 2, "dd": 3, "A": -1, "b": -1, "": -1, "ddd": -1}
	for _, order := range [][]string{
		{"a", "bb", "c", "dd"}, {"a", "c", "dd"}, {"dd", "c", "bb", "a"}, {"c", "a", "dd", "bb"},
		{"A", "a", "b", "bb", "", "ddd", "dd"}, {"bb", "ddd", "c"},
	} {
		data := []byte(`{"` + strings.Join(order, `":1,"`) + `":1}`)
		s := jsonscan.Scanner{B: data}
		o := fs.Object(&s)
		var got []string
		for i := 0; o.Next(&s); i++ {
			if o.Field != want[order[i]] {
				t.Errorf("%s: member %q at %d, want %d", data, order[i], o.Field, want[order[i]])
			}
			got = append(got, order[i])
			if _, _, ok := s.Number(); !ok {
				t.Fatalf("%s: no number for %q", data, order[i])
			}
		}
		if !o.Done() || len(got) != len(order) {
			t.Errorf("%s: read %q, done %v", data, got, o.Done())
		}
	}
}
