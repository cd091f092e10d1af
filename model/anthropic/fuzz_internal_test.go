package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// FuzzParseMessage feeds Messages API bodies to the response decoder: a
// body it refuses is a *DecodeError (ErrMalformedResponse), never a panic;
// one it accepts gives items of valid JSON that a following request can
// carry again (what the adapter read, it sends back: thinking blocks,
// server-tool blocks, calls, text and a refusal).
func FuzzParseMessage(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	f.Add([]byte(`{"id":"msg_2","content":[{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}}]}`))
	f.Add([]byte(`{"id":"msg_3","content":[{"type":"text","text":"no"}],"stop_reason":"refusal"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := parseMessage(body, "")
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) && !errors.Is(err, ErrMalformedResponse) {
				t.Fatalf("refused with %T %v, want a *DecodeError", err, err)
			}
			return
		}
		for _, it := range resp.Items {
			if it.IsZero() {
				t.Fatal("a zero item in the response")
			}
			if !json.Valid(it.AppendRaw(nil)) {
				t.Fatalf("item %v: raw JSON not valid: %s", it, it.AppendRaw(nil))
			}
		}
		cfg := newConfig(nil)
		msgs, err := cfg.appendMessages(nil, state.ItemsOf(append([]state.Item{state.UserMessage("q")}, resp.Items...)))
		if err != nil {
			t.Fatalf("the items read cannot be sent back: %v", err)
		}
		if !json.Valid(msgs) {
			t.Fatalf("the items read are sent back as invalid JSON: %s", msgs)
		}
	})
}

// parseMessageTwoPass is the decoder parseMessage replaced: the body's
// blocks as JSON values, then each block read on its own. The one-pass
// decoder must read every body as it did.
func parseMessageTwoPass(body []byte) (*pipeline.ModelResponse, error) {
	var r struct {
		ID         string            `json:"id"`
		Model      string            `json:"model"`
		StopReason string            `json:"stop_reason"`
		Content    []json.RawMessage `json:"content"`
		Usage      *usageBody        `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	blocks := make([]block, len(r.Content))
	for i, raw := range r.Content {
		b, err := readBlock(raw)
		if err != nil {
			return nil, err
		}
		blocks[i] = b
	}
	items, err := responseItems(r.ID, blocks, r.StopReason, "")
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: r.ID, Model: r.Model, Items: items, Usage: r.Usage.usage()}, nil
}

// FuzzParseMessageMatchesTwoPass: the one-pass decoder accepts what the
// two-pass one accepted, with the same response, and refuses the rest.
func FuzzParseMessageMatchesTwoPass(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"m","content":[{"type":"web_search_tool_result","tool_use_id":"s","content":[]},{"type":"text","text":"a"},null,{"TYPE":"x"}],"stop_reason":"end_turn"}`))
	f.Add([]byte(`{"id":"m","content":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseMessage(body, "")
		want, werr := parseMessageTwoPass(body)
		if (err == nil) != (werr == nil) {
			t.Fatalf("one pass: %v; two passes: %v", err, werr)
		}
		if err != nil {
			return
		}
		if got.ID != want.ID || got.Model != want.Model || got.Usage != want.Usage || len(got.Items) != len(want.Items) {
			t.Fatalf("one pass %+v, two passes %+v", got, want)
		}
		for i := range got.Items {
			if !got.Items[i].Equal(want.Items[i]) {
				t.Fatalf("item %d: %v, two passes %v", i, got.Items[i], want.Items[i])
			}
		}
	})
}

// FuzzReadMessage: what the hand-written body reader reads, it reads as
// encoding/json does (parseMessageJSON): the same response, item for
// item; what it does not read is left to encoding/json.
func FuzzReadMessage(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, tt := range readMessageCases {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf [4]block
		msg, blocks, ok := readMessage(body, buf[:0])
		if !ok {
			return
		}
		got, err := responseItems(msg.ID, blocks, msg.StopReason, "")
		want, werr := parseMessageJSON(body, "")
		if (err == nil) != (werr == nil) {
			t.Fatalf("read by hand: %v; by encoding/json: %v", err, werr)
		}
		if err != nil {
			return
		}
		if msg.ID != want.ID || msg.Model != want.Model || msg.Usage.usage() != want.Usage || len(got) != len(want.Items) {
			t.Fatalf("read by hand %+v %v, by encoding/json %+v", msg, got, want)
		}
		for i := range got {
			if !got[i].Equal(want.Items[i]) {
				t.Fatalf("item %d: %v, by encoding/json %v", i, got[i], want.Items[i])
			}
		}
	})
}

// chunkReader returns its bytes n at a time.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// FuzzSSEReader: the stream reader reads the events the SDK's decoder
// reads from the same body, with the same types and data (the SDK's with
// a newline after the last line), whatever the size of its buffer and of
// the body's reads.
func FuzzSSEReader(f *testing.F) {
	f.Add(benchStream(), uint8(7), uint8(3))
	f.Add([]byte("event: a\r\ndata: 1\ndata: 2\n\n: comment\n\nevent: b\n\ndata\n\nid: 3\ndata:x\n\nevent: c\ndata: tail"), uint8(1), uint8(1))
	f.Add([]byte("\n\n\r\ndata: \n\nevent:\ndata:\n\n"), uint8(2), uint8(200))
	f.Fuzz(func(t *testing.T, body []byte, bufSize, chunk uint8) {
		want := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))})
		defer want.Close()
		buf := make([]byte, 1+int(bufSize)%32)
		got := &sseReader{body: io.NopCloser(&chunkReader{b: body, n: 1 + int(chunk)%64}), buf: &buf}
		defer got.Close()
		for n := 0; ; n++ {
			g, w := got.Next(), want.Next()
			if g != w {
				t.Fatalf("event %d: read %v, SDK's %v", n, g, w)
			}
			if !g {
				break
			}
			ge, we := got.Event(), want.Event()
			if ge.Type != we.Type || !bytes.Equal(ge.Data, bytes.TrimSuffix(we.Data, []byte("\n"))) {
				t.Fatalf("event %d: %q %q, SDK's %q %q", n, ge.Type, ge.Data, we.Type, we.Data)
			}
		}
		if (got.Err() == nil) != (want.Err() == nil) {
			t.Fatalf("error %v, SDK's %v", got.Err(), want.Err())
		}
	})
}

// FuzzReadEvent: what the hand-written event reader reads, it reads as
// encoding/json reads it into a streamEvent, for what the stream keeps.
func FuzzReadEvent(f *testing.F) {
	for _, ln := range bytes.Split(benchStream(), []byte("\n")) {
		if data, ok := bytes.CutPrefix(ln, []byte("data: ")); ok {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`))
	f.Add([]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"type":null},"usage":{"output_tokens":5,"cache_read_input_tokens":null}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			got, want streamEvent
			sc        eventScratch
		)
		if !readEvent(data, &got, &sc) {
			return
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("read by hand %+v; encoding/json: %v", got, err)
		}
		if got.Type != want.Type || got.Index != want.Index || got.Delta.StopReason != want.Delta.StopReason {
			t.Fatalf("read by hand %+v, by encoding/json %+v", got, want)
		}
		if (got.Message == nil) != (want.Message == nil) || (got.ContentBlock == nil) != (want.ContentBlock == nil) || (got.Usage == nil) != (want.Usage == nil) {
			t.Fatalf("read by hand %+v, by encoding/json %+v", got, want)
		}
		if m, w := got.Message, want.Message; m != nil && (m.ID != w.ID || m.Model != w.Model || m.StopReason != w.StopReason || m.Usage != w.Usage) {
			t.Fatalf("message %+v, by encoding/json %+v", *m, *w)
		}
		if b, w := got.ContentBlock, want.ContentBlock; b != nil && (b.Type != w.Type || b.Text != w.Text || b.ID != w.ID || b.Name != w.Name ||
			b.Thinking != w.Thinking || b.Signature != w.Signature || b.Data != w.Data || b.arguments() != w.arguments()) {
			t.Fatalf("block %+v, by encoding/json %+v", *b, *w)
		}
		if got.Usage != nil && *got.Usage != *want.Usage {
			t.Fatalf("usage %+v, by encoding/json %+v", *got.Usage, *want.Usage)
		}
	})
}

// FuzzWriteString: a delta's JSON string with escapes is written with
// the text encoding/json reads, and one encoding/json refuses is refused
// with nothing written (validString agreeing); one without escapes is
// written as it is, unless a quote inside makes it more than one value.
func FuzzWriteString(f *testing.F) {
	f.Add([]byte(`"a \"quoted\" \u00e9\n\ud83d\ude00 \/"`))
	f.Add([]byte(`"\ud83d"`))
	f.Add([]byte(`"bad \q"`))
	f.Add([]byte(`"plain"`))
	f.Add([]byte(`"a"b"`))
	f.Fuzz(func(t *testing.T, str []byte) {
		if len(str) < 2 || str[0] != '"' || str[len(str)-1] != '"' {
			return
		}
		var sb strings.Builder
		sb.WriteString("before")
		ok := writeString(&sb, str)
		if ok != validString(str) {
			t.Fatalf("writeString(%q) = %v, validString %v", str, ok, !ok)
		}
		got, found := strings.CutPrefix(sb.String(), "before")
		if !found || (!ok && got != "") {
			t.Fatalf("writeString(%q) = %v, wrote %q", str, ok, sb.String())
		}
		inner := str[1 : len(str)-1]
		if !bytes.Contains(inner, []byte{'\\'}) {
			if want := !bytes.Contains(inner, []byte{'"'}); ok != want || (ok && got != string(inner)) {
				t.Fatalf("writeString(%q) = %v, %q; want %v, the string as it is", str, ok, got, want)
			}
			return
		}
		var want string
		err := json.Unmarshal(str, &want)
		if ok != (err == nil) || got != want {
			t.Fatalf("writeString(%q) = %q, %v; encoding/json %q, %v", str, got, ok, want, err)
		}
	})
}

// FuzzValidJSON: jsonscan.Valid, on the bodies and events this adapter reads, agrees with json.Valid.
func FuzzValidJSON(f *testing.F) {
	f.Add([]byte(benchReply))
	for _, ln := range bytes.Split(benchStream(), []byte("\n")) {
		if data, ok := bytes.CutPrefix(ln, []byte("data: ")); ok {
			f.Add(data)
		}
	}
	for _, s := range []string{``, ` `, `0`, `-0.5e+3`, `01`, `1.`, `1e`, `-`, `.5`, `"\u12"`, `"\ud800"`, "\"\x01\"", "\"\xff\"", `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `{1:2}`, `[1 2]`, ` {"a":[true,false,null,{"b":"c\"\\\/\b\f\n\r\t"}]} `, `nul`, `truex`, `[] []`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonscan.Valid(b), json.Valid(b); got != want {
			t.Fatalf("jsonscan.Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
