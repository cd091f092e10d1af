package tool_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

func TestText(t *testing.T) {
	var got string
	sql := tool.Text("run_sql", "Runs SQL.", func(ctx context.Context, input string) (string, error) {
		if _, ok := tool.CallFromContext(ctx); !ok {
			t.Error("no call in the context")
		}
		got = input
		return "1 row", nil
	}, tool.Grammar("lark", `start: "SELECT" /[^;]+/ ";"`))
	spec := sql.Spec()
	if spec.Name != "run_sql" || spec.Description != "Runs SQL." || spec.Parameters != nil {
		t.Errorf("spec %+v", spec)
	}
	if want := `{"type":"grammar","syntax":"lark","definition":"start: \"SELECT\" /[^;]+/ \";\""}`; string(spec.Custom) != want {
		t.Errorf("format %s, want %s", spec.Custom, want)
	}
	call := &pipeline.ToolCall{Item: state.CustomCall("", "c1", "run_sql", "SELECT {not json};"), Name: "run_sql", CallID: "c1", Arguments: "SELECT {not json};"}
	out, err := sql.Call(context.Background(), call)
	if err != nil || out != "1 row" || got != "SELECT {not json};" {
		t.Errorf("Call = %q, %v; fn got %q", out, err, got)
	}
	if _, ok := sql.(pipeline.ApprovalRequirer); ok {
		t.Error("a Text tool without approval options is an ApprovalRequirer")
	}

	free := tool.Text("note", "", func(context.Context, string) (string, error) { return "", nil }, tool.NeedsApproval(true))
	if string(free.Spec().Custom) != `{"type":"text"}` {
		t.Errorf("free text format %s", free.Spec().Custom)
	}
	ar, ok := free.(pipeline.ApprovalRequirer)
	if !ok {
		t.Fatal("NeedsApproval did not make an ApprovalRequirer")
	}
	if need, err := ar.NeedsApproval(context.Background(), call); !need || err != nil {
		t.Errorf("NeedsApproval = %v, %v", need, err)
	}
}

func TestTextPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil fn":   func() { tool.Text[string]("x", "", nil) },
		"bad name": func() { tool.Text("a b", "", func(context.Context, string) (string, error) { return "", nil }) },
		"Func grammar": func() {
			tool.Func("f", "", func(context.Context, struct{}) (string, error) { return "", nil }, tool.Grammar("regex", "a+"))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestTextContent tests a custom tool answering with an image: the run
// records a custom_tool_call_output whose output is the parts, and the
// next model call sees it.
func TestTextContent(t *testing.T) {
	img := state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "low")
	render := tool.Text("render", "Renders a diagram.", func(ctx context.Context, input string) (tool.Content, error) {
		return tool.Content{state.TextPart("rendered " + input), img}, nil
	})
	model := scripted.New(
		scripted.Respond(scripted.Item(state.CustomCall("ctc_1", "call_r", "render", "a -> b"))),
		scripted.Reply("done"),
	)
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{render}}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("draw"))
	if err != nil {
		t.Fatal(err)
	}
	var out state.Item
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindCustomOutput {
			out = it
		}
	}
	parts := out.Content()
	if len(parts) != 2 || parts[0].Text() != "rendered a -> b" || parts[1] != img {
		t.Fatalf("custom output %s has parts %v", out, parts)
	}
	if out.Text() != "rendered a -> b" {
		t.Errorf("custom output text %q", out.Text())
	}
	calls := model.Calls()
	last := calls[len(calls)-1].Input
	if seen := last.At(last.Len() - 1); !seen.Equal(out) {
		t.Errorf("the next model call saw %s, want %s", seen, out)
	}
}
