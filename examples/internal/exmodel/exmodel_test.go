package exmodel

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestPick(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		live     bool
		settings pipeline.ModelSettings
	}{
		{name: "no key", env: nil, settings: pipeline.ModelSettings{}},
		{name: "model without key", env: map[string]string{"OPENAI_MODEL": "gpt-5"}, settings: pipeline.ModelSettings{}},
		{name: "key", env: map[string]string{"OPENAI_API_KEY": "sk-x"}, live: true, settings: pipeline.ModelSettings{Model: DefaultModel}},
		{name: "key and model", env: map[string]string{"OPENAI_API_KEY": "sk-x", "OPENAI_MODEL": "gpt-5-nano"}, live: true, settings: pipeline.ModelSettings{Model: "gpt-5-nano"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := env(tt.env)
			if got := live(getenv); got != tt.live {
				t.Errorf("live = %v, want %v", got, tt.live)
			}
			m := pick(getenv, []scripted.Step{scripted.Reply("offline")})
			switch m.(type) {
			case *openai.Model:
				if !tt.live {
					t.Errorf("got the OpenAI model without a key")
				}
			case *scripted.Model:
				if tt.live {
					t.Errorf("got the scripted model with a key")
				}
			default:
				t.Errorf("unexpected model %T", m)
			}
			offline := pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) { return nil, nil })
			if _, isOpenAI := or(getenv, offline).(*openai.Model); isOpenAI != tt.live {
				t.Errorf("Or gave the OpenAI model: %v, want %v", isOpenAI, tt.live)
			}
			if diff := cmp.Diff(tt.settings, settings(getenv)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// The offline model plays the script through a real run.
func TestPickOffline(t *testing.T) {
	agent := &pipeline.Agent{Name: "a", Model: pick(env(nil), []scripted.Step{scripted.Reply("offline")}), Settings: settings(env(nil))}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalOutput() != "offline" {
		t.Errorf("final output %q", res.FinalOutput())
	}
}
