package tool_test

import (
	"context"
	"testing"

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
		"nil fn":   func() { tool.Text("x", "", nil) },
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
