package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

func TestSmoke(t *testing.T) {
	add := pipeline.NewTool(pipeline.ToolSpec{Name: "add"}, func(ctx context.Context, args json.RawMessage) (string, error) {
		return "3", nil
	})
	m := scripted.New(
		scripted.Respond(scripted.Think("hm"), scripted.Text("let me add"), scripted.Call("add", `{"a":1}`), scripted.Call("add", `{"a":2}`)),
		scripted.Reply("done"),
	)
	a := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{add}}
	r := pipeline.NewRunner()
	res, err := r.Run(context.Background(), a, pipeline.UserInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.NewItems() {
		t.Log(it, it.Text())
	}
	var evs []string
	for ev, err := range r.Stream(context.Background(), &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("add", "{}"), scripted.Reply("hello world")), Tools: []pipeline.Tool{add}}, pipeline.UserInput("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, fmtEv(ev))
	}
	t.Log(evs)
}

func fmtEv(ev pipeline.Event) string {
	b, _ := json.Marshal(ev)
	return string(b)
}
