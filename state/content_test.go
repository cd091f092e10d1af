package state_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestUserContent(t *testing.T) {
	it := state.UserContent(
		state.TextPart("What is in "),
		state.ImageURL("https://example.com/cat.png", ""),
		state.ImageFile("file-img", "high"),
		state.TextPart("and these?"),
		state.FileID("file-pdf"),
		state.FileURL("https://example.com/a.pdf"),
		state.FileData("notes.txt", "data:text/plain;base64,aGk="),
	)
	want := `{"type":"message","role":"user","content":[` +
		`{"type":"input_text","text":"What is in "},` +
		`{"type":"input_image","detail":"auto","image_url":"https://example.com/cat.png"},` +
		`{"type":"input_image","detail":"high","file_id":"file-img"},` +
		`{"type":"input_text","text":"and these?"},` +
		`{"type":"input_file","file_id":"file-pdf"},` +
		`{"type":"input_file","file_url":"https://example.com/a.pdf"},` +
		`{"type":"input_file","filename":"notes.txt","file_data":"data:text/plain;base64,aGk="}]}`
	if string(it.Raw()) != want {
		t.Errorf("raw\n got %s\nwant %s", it.Raw(), want)
	}
	if it.Kind() != state.KindUserMessage || it.Text() != "What is in and these?" {
		t.Errorf("%v %q", it, it.Text())
	}
	back, err := state.ParseItem(state.KindUserMessage, it.Raw())
	if err != nil || !back.Equal(it) || back.Text() != it.Text() {
		t.Errorf("ParseItem = %v %q, %v", back, back.Text(), err)
	}
	ref, err := state.ParseItemReference(state.KindUserMessage, it.Raw())
	if err != nil || ref.Text() != it.Text() {
		t.Errorf("reference %q, %v", ref.Text(), err)
	}
	r := state.NewRun("r", "a")
	r.SetMaxTurns(1)
	r.AddInput(it)
	data, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := state.Unmarshal(data)
	if err != nil || !got.Items().At(0).Equal(r.Items().At(0)) {
		t.Errorf("checkpoint round trip: %v", err)
	}
}

func TestToolOutputContent(t *testing.T) {
	t.Parallel()
	parts := []state.ContentPart{
		state.TextPart("the chart "),
		state.ImageURL("data:image/png;base64,iVBO", ""),
		state.ImageFile("file-img", "low"),
		state.TextPart("and its data"),
		state.FileData("chart.csv", "data:text/csv;base64,YSwx"),
	}
	tests := []struct {
		name     string
		give     state.Item
		wantKind state.Kind
		wantRaw  string
	}{
		{
			name:     "function",
			give:     state.ToolOutputContent("call_1", "plot", parts...),
			wantKind: state.KindToolOutput,
			wantRaw:  `{"type":"function_call_output","call_id":"call_1","output":[`,
		},
		{
			name:     "custom",
			give:     state.CustomOutputContent("call_1", "plot", parts...),
			wantKind: state.KindCustomOutput,
			wantRaw:  `{"type":"custom_tool_call_output","call_id":"call_1","output":[`,
		},
	}
	const wantParts = `{"type":"input_text","text":"the chart "},` +
		`{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBO"},` +
		`{"type":"input_image","detail":"low","file_id":"file-img"},` +
		`{"type":"input_text","text":"and its data"},` +
		`{"type":"input_file","filename":"chart.csv","file_data":"data:text/csv;base64,YSwx"}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			it := tt.give
			if got := string(it.Raw()); got != tt.wantRaw+wantParts {
				t.Errorf("raw\n got %s\nwant %s", got, tt.wantRaw+wantParts)
			}
			if it.Kind() != tt.wantKind || it.CallID() != "call_1" || it.Name() != "plot" || it.Text() != "the chart and its data" {
				t.Errorf("item %v %q", it, it.Text())
			}
			if d := cmp.Diff(parts, it.Content(), cmp.AllowUnexported(state.ContentPart{})); d != "" {
				t.Errorf("Content (-want +got):\n%s", d)
			}
			back, err := state.ParseItem(tt.wantKind, it.Raw())
			if err != nil || !back.WithName("plot").Equal(it) || back.Text() != it.Text() {
				t.Errorf("ParseItem = %v %q, %v", back, back.Text(), err)
			}
			if _, ok := state.ParseItemFastOnly(tt.wantKind, it.Raw()); !ok && tt.wantKind == state.KindToolOutput {
				t.Error("the fast path refused the output")
			}
			ref, err := state.ParseItemReference(tt.wantKind, it.Raw())
			if err != nil || ref.Text() != it.Text() {
				t.Errorf("reference %q, %v", ref.Text(), err)
			}
		})
	}
}

// TestContentRemakesItem: the parts Content reads back make the same item,
// byte for byte, even for parts turnkit does not write itself.
func TestContentRemakesItem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind state.Kind
		give string
	}{
		{name: "function", kind: state.KindToolOutput, give: `{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a<b"},{"type":"input_image","image_url":"https://x/y.png"}]}`},
		{name: "unknown part", kind: state.KindToolOutput, give: `{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"x","annotations":[]},{"type":"input_audio","data":"AA=="},null]}`},
		{name: "field order", kind: state.KindToolOutput, give: `{"type":"function_call_output","call_id":"c","output":[{"image_url":"u","type":"input_image","detail":"high"}]}`},
		{name: "empty", kind: state.KindToolOutput, give: `{"type":"function_call_output","call_id":"c","output":[]}`},
		{name: "custom", kind: state.KindCustomOutput, give: `{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_file","file_id":"f"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			it, err := state.ParseItem(tt.kind, []byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			parts := it.Content()
			if parts == nil {
				t.Fatal("Content = nil")
			}
			remade := state.ToolOutputContent("c", "", parts...)
			if tt.kind == state.KindCustomOutput {
				remade = state.CustomOutputContent("c", "", parts...)
			}
			if !remade.Equal(it) || remade.Text() != it.Text() {
				t.Errorf("remade %s %q\n want %s %q", remade.Raw(), remade.Text(), it.Raw(), it.Text())
			}
		})
	}
}

func TestContentOfStrings(t *testing.T) {
	t.Parallel()
	for _, it := range []state.Item{
		state.ToolOutput("c", "f", `["a","b"]`), state.UserMessage("[x]"), state.CustomOutput("c", "f", "[]"),
		state.AssistantMessage("m", "hi"), state.ToolCall("fc", "c", "f", `[1]`),
	} {
		if got := it.Content(); got != nil {
			t.Errorf("%v: Content = %v, want nil", it, got)
		}
	}
}

func TestContentCheckpoint(t *testing.T) {
	t.Parallel()
	r := statetest.ContentRun(t, "run_content")
	data, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if state.UnmarshalFastOnly(data, nil) == nil {
		t.Error("the fast path refused the checkpoint")
	}
	for name, unmarshal := range map[string]func([]byte, ...state.UnmarshalOption) (*state.Run, error){
		"fast": state.Unmarshal, "reference": state.UnmarshalReference,
	} {
		got, err := unmarshal(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := statetest.Diff(t, got, r); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	checkCodec(t, r)
}

// TestContentPartAccessors tests that every part reads back, through
// Item.Content, what its constructor was given.
func TestContentPartAccessors(t *testing.T) {
	it := state.UserContent(
		state.TextPart("look"),
		state.ImageURL("https://example.com/a.png", "high"),
		state.ImageFile("file-img", ""),
		state.FileID("file-pdf"),
		state.FileURL("https://example.com/b.pdf"),
		state.FileData("c.pdf", "data:application/pdf;base64,JVBERi0="),
	)
	type view struct{ Type, Text, URL, FileID, Detail, Name, Data string }
	var got []view
	for _, p := range it.Content() {
		name, data := p.FileData()
		got = append(got, view{p.Type(), p.Text(), p.URL(), p.FileID(), p.Detail(), name, data})
	}
	want := []view{
		{Type: "input_text", Text: "look"},
		{Type: "input_image", URL: "https://example.com/a.png", Detail: "high"},
		{Type: "input_image", FileID: "file-img", Detail: "auto"},
		{Type: "input_file", FileID: "file-pdf"},
		{Type: "input_file", URL: "https://example.com/b.pdf"},
		{Type: "input_file", Name: "c.pdf", Data: "data:application/pdf;base64,JVBERi0="},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parts read back (-want +got):\n%s", diff)
	}
}
