package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// chatDecodeSeeds are chunks and bodies at the edges of chunkView's
// reader: escapes and invalid UTF-8 in strings, nulls everywhere, numbers
// encoding/json refuses for an int, members named in another case or
// given twice, JSON that is not an object, nesting past encoding/json's
// limit.
var chatDecodeSeeds = []string{
	`{"id":"a\u00e9\ud83d\ude00\ud800x\udc00\\","model":"m\/1","choices":[{"index":0,"delta":{"content":"\"hi\"\n\t\b\f\r\u001f"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"\xff\xfe ok \xe2\x82\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"caf\xc3\xa9 \xe2\x82\xac\"}}]}",
	`{"ID":"x","choices":[]}`,
	`{"id":"x","id":"y"}`,
	`{"choices":[{"index":0}],"choices":[{"delta":{"content":"a"}}]}`,
	`{"choices":[{"index":1.0}]}`,
	`{"choices":[{"index":1e2}]}`,
	`{"choices":[{"index":-0,"finish_reason":"stop"}]}`,
	`{"choices":[{"index":99999999999999999999}]}`,
	`{"choices":[{"index":-9223372036854775808}]}`,
	`{"choices":[{"index":9223372036854775807}]}`,
	`{"choices":[null,{"delta":null,"message":{"tool_calls":[null,{"function":null},{"index":2,"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
	`{"choices":null,"usage":null,"error":null}`,
	`{"choices":[{"index":"0"}]}`,
	`{"choices":{}}`,
	`{"usage":{"prompt_tokens":1,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":2,"x":[1,{"y":true,"z":false}],"audio_tokens":0},"total_tokens":3}}`,
	`{"usage":{}}`,
	`{"error":{"code":"server_error","message":"m"}}`,
	`{"error":{}}`,
	`{"error":"str"}`,
	`{"Error":{"code":"c"}}`,
	`{"i\u0064":"x"}`,
	"{\"\xc5\xbfx\":1}",
	"{\"\xe2\x84\xaaey\":1}",
	`{"choices":[{"delta":{"refusal":"no","tool_calls":[]}}],"obfuscation":"Xy1"}`,
	`null`, `[]`, `"x"`, ` {} `, `{}x`, `{`, `{"id":}`, `{"id":"x",}`, `{"id" "x"}`, `{"id":"\x"}`, `{"id":"\u12"}`, "{\"id\":\"\n\"}",
	`{"a":-}`, `{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`, `{"a":[1,]}`, `{"a":[1 2]}`,
	`{"x":` + strings.Repeat("[", jsonscan.ValidMaxDepth) + strings.Repeat("]", jsonscan.ValidMaxDepth) + `}`,
	`{"x":` + strings.Repeat("[", jsonscan.ValidMaxDepth-1) + strings.Repeat("]", jsonscan.ValidMaxDepth-1) + `}`,
	`{"x":` + strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth) + `}`,
	`{"x":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}`,
}

// FuzzChatChunk holds chunkView's reader to encoding/json: whenever
// decode reads data, json.Unmarshal reads it too, into the same chatChunk
// (or chatBody, without the error member), and read, decode with
// encoding/json's help, fails exactly when json.Unmarshal does and reads
// the same otherwise.
func FuzzChatChunk(f *testing.F) {
	for _, s := range chatDecodeSeeds {
		f.Add([]byte(s))
	}
	for _, pattern := range []string{"testdata/chat_*.json", "testdata/chat_*.sse"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if !strings.HasSuffix(name, ".sse") {
				f.Add(data)
				continue
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				if chunk, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					f.Add(chunk)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, withError := range []bool{true, false} {
			want, wantErr := chatChunkOf(data, withError)
			var v chunkView
			if v.decode(data, withError) {
				if wantErr != nil {
					t.Fatalf("decode (withError %v) read %q, which encoding/json refuses: %v", withError, data, wantErr)
				}
				if got := v.chatChunk(); !reflect.DeepEqual(got, want) {
					t.Fatalf("decode (withError %v) of %q:\n got %+v\nwant %+v", withError, data, got, want)
				}
			}
			err := v.read(data, withError)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("read (withError %v) of %q: error %v, encoding/json's %v", withError, data, err, wantErr)
			}
			if err == nil {
				if got := v.chatChunk(); !reflect.DeepEqual(got, want) {
					t.Fatalf("read (withError %v) of %q:\n got %+v\nwant %+v", withError, data, got, want)
				}
			}
		}
	})
}

// chatChunkOf returns data as encoding/json decodes it into a chatChunk,
// or, without withError, into a chatBody, with empty lists made nil.
func chatChunkOf(data []byte, withError bool) (chatChunk, error) {
	var ch chatChunk
	var err error
	if withError {
		err = json.Unmarshal(data, &ch)
	} else {
		err = json.Unmarshal(data, &ch.chatBody)
	}
	if len(ch.Choices) == 0 {
		ch.Choices = nil
	}
	for i := range ch.Choices {
		for _, m := range []*chatMessage{&ch.Choices[i].Message, &ch.Choices[i].Delta} {
			if len(m.ToolCalls) == 0 {
				m.ToolCalls = nil
			}
		}
	}
	return ch, err
}

// chatChunk returns the view as a chatChunk, with empty lists nil.
func (v *chunkView) chatChunk() chatChunk {
	ch := chatChunk{chatBody: chatBody{ID: v.id.String(), Model: v.model.String()}}
	for i := range v.choices {
		c := &v.choices[i]
		ch.Choices = append(ch.Choices, chatChoice{Index: c.index, Message: v.messageOf(&c.message),
			Delta: v.messageOf(&c.delta), FinishReason: c.finishReason.String()})
	}
	if v.hasUsage {
		u := v.usage
		ch.Usage = &u
	}
	if v.hasError {
		ch.Error = &errorBody{Code: v.errCode.String(), Message: v.errMsg.String()}
	}
	return ch
}

// TestChunkViewPlainStrings checks that a string without escapes is
// plain, one with an escape or invalid UTF-8 is not, and that both give
// their text.
func TestChunkViewPlainStrings(t *testing.T) {
	for _, tc := range []struct {
		json, text string
		plain      bool
	}{
		{`"Paris"`, "Paris", true},
		{`""`, "", true},
		{"\"caf\xc3\xa9\"", "café", true},
		{`"a\"b"`, `a"b`, false},
		{"\"\xff\"", "\ufffd", false},
		{`"\ud83d\ude00"`, "😀", false},
		{`"\ud83dx"`, "\ufffdx", false},
	} {
		s := newScanner([]byte(tc.json))
		var got jstr
		if !s.str(&got) || s.I != len(tc.json) {
			t.Errorf("%s: not read", tc.json)
			continue
		}
		if got.plain != tc.plain || got.String() != tc.text || !got.is(tc.text) || string(got.appendTo(nil)) != tc.text {
			t.Errorf("%s: plain %v, text %q; want %v, %q", tc.json, got.plain, got.String(), tc.plain, tc.text)
		}
	}
}

// FuzzResponseBody holds responseBody.decode to encoding/json: whenever
// it reads data, json.Unmarshal reads it too, into the same responseBody.
func FuzzResponseBody(f *testing.F) {
	for _, s := range chatDecodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"id":"resp_1","model":"m","status":"completed","error":null,"output":[{"type":"message"} , null,1,"x",[]],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":1},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":5}}`,
		`{"output":null,"usage":null,"error":{"code":"c","message":"m\u00e9"}}`,
		`{"output":[],"usage":{},"error":{}}`,
		`{"Status":"failed"}`, `{"output":{}}`, `{"usage":{"input_tokens":1.5}}`, `{"error":"x"}`,
	} {
		f.Add([]byte(s))
	}
	addFiles(f, "testdata/responses_*.json")
	f.Fuzz(func(t *testing.T, data []byte) { readsAsJSON(t, data, (*responseBody).decode) })
}

// readsAsJSON checks that when decode reads data into a T, encoding/json
// reads data too, into an equal T; decode may leave to encoding/json
// what it does not read.
func readsAsJSON[T any](t *testing.T, data []byte, decode func(*T, []byte) bool) {
	t.Helper()
	var got T
	if !decode(&got, data) {
		return
	}
	var want T
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("decode read %q, which encoding/json refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decode of %q:\n got %+v\nwant %+v", data, got, want)
	}
}

// FuzzItemHead holds itemHead to encoding/json: when it reads an item,
// json.Unmarshal reads the same type and role, and an item it calls
// compact is what json.Compact makes of it.
func FuzzItemHead(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","role":"assistant","content":[]}`, `{"type":"mess\u0061ge","role":null}`,
		`{ "type": "reasoning" }`, `{"Type":"x"}`, `{"type":"a","type":"b"}`, `{"type":1}`, `null`, `[]`, `{"type":"x"} `,
	} {
		f.Add([]byte(s))
	}
	addFiles(f, "testdata/items/*.json")
	f.Fuzz(func(t *testing.T, raw []byte) {
		typ, role, compact, ok := itemHead(raw)
		if !ok {
			return
		}
		var head struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatalf("itemHead read %q, which encoding/json refuses: %v", raw, err)
		}
		if typ.String() != head.Type || role.String() != head.Role {
			t.Fatalf("itemHead of %q: %q, %q; encoding/json: %q, %q", raw, typ.String(), role.String(), head.Type, head.Role)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			t.Fatal(err)
		}
		if compact && !bytes.Equal(buf.Bytes(), raw) {
			t.Fatalf("itemHead calls %q compact; json.Compact makes %q", raw, buf.Bytes())
		}
	})
}

// FuzzStreamEvent holds streamEvent.decode to encoding/json: when it
// reads a Responses API stream event, json.Unmarshal reads the same
// event. The seeds are the data of every recorded stream's events and
// the edges of the reader.
func FuzzStreamEvent(f *testing.F) {
	for _, s := range chatDecodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"type":"response.output_item.done","output_index":2,"item":{"type":"message","role":"assistant"} }`,
		`{"type":"response.output_text.delta","item_id":"msg_1","delta":"caf\u00e9 \ud83d","output_index":0}`,
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[null,{"type":"x"}],"usage":null}}`,
		`{"type":"response.failed","response":null}`, `{"type":"error","code":"server_error","message":"boom","param":null}`,
		`{"item":null,"response":{}}`, `{"output_index":-1}`, `{"output_index":1.0}`, `{"output_index":9223372036854775808}`,
		`{"Type":"error"}`, `{"type":"a","type":"b"}`, `{"item":1,"item":2}`, `{"delta":1}`, `{"response":{"output":{}}}`,
		`{"response":{"id":"a"},"response":{"model":"b"}}`, `null`, `[]`, `{"type":"x"} x`,
	} {
		f.Add([]byte(s))
	}
	files, err := filepath.Glob("testdata/*.sse")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if ev, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add([]byte(strings.TrimSuffix(ev, "\n")))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { readsAsJSON(t, data, (*streamEvent).decode) })
}
