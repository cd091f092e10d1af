package state_test

import (
	"testing"

	"github.com/turnkit/turnkit/state"
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
	r := state.NewRun("r", "a", 1)
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
