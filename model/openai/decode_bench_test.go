package openai

import "testing"

// BenchmarkChunkDecode measures chunkView.decode alone on the chunks a
// stream mostly has: a text delta, and a tool call's arguments piece.
func BenchmarkChunkDecode(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"text", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-5-mini","choices":[{"index":0,"delta":{"content":"word \"42\"\n"},"logprobs":null,"finish_reason":null}]}`},
		{"args", `{"id":"chatcmpl-1","model":"gpt-5-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"p7\":1}"}}]},"finish_reason":null}],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}}`},
	} {
		data := []byte(c.data)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var v chunkView
			for b.Loop() {
				if !v.decode(data, true) {
					b.Fatal("not decoded")
				}
			}
		})
	}
}
