// Package exmodel picks the model turnkit's examples run on: OpenAI when
// OPENAI_API_KEY is set, a scripted model otherwise, so that every example
// runs offline and deterministically, and for real with a key.
//
//	agent := &pipeline.Agent{
//		Name:     "assistant",
//		Model:    exmodel.Pick(scripted.Reply("Hello!")),
//		Settings: exmodel.Settings(),
//	}
package exmodel

import (
	"os"

	sdk "github.com/openai/openai-go/v3"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// DefaultModel is the OpenAI model used when OPENAI_MODEL is not set.
const DefaultModel = "gpt-5-mini"

// Live reports whether the examples talk to OpenAI: OPENAI_API_KEY is set.
func Live() bool { return live(os.Getenv) }

// Pick returns the OpenAI Responses API model when OPENAI_API_KEY is set
// (the client reads the key, and OPENAI_BASE_URL if set, from the
// environment), and otherwise a scripted model that answers the n-th call
// with script[n-1]. The script is ignored when live.
func Pick(script ...scripted.Step) pipeline.Model { return pick(os.Getenv, script) }

// Or returns the OpenAI Responses API model when OPENAI_API_KEY is set, and
// offline otherwise: for examples whose offline model is not a script.
func Or(offline pipeline.Model) pipeline.Model { return or(os.Getenv, offline) }

// Settings returns the model settings to give an example's agents: the
// model named by OPENAI_MODEL (default [DefaultModel]) when live, and the
// zero settings for the scripted model.
func Settings() pipeline.ModelSettings { return settings(os.Getenv) }

func live(getenv func(string) string) bool { return getenv("OPENAI_API_KEY") != "" }

func pick(getenv func(string) string, script []scripted.Step) pipeline.Model {
	if !live(getenv) {
		return scripted.New(script...)
	}
	return or(getenv, nil)
}

func or(getenv func(string) string, offline pipeline.Model) pipeline.Model {
	if !live(getenv) {
		return offline
	}
	return openai.New(sdk.NewClient(), openai.WithModel(modelName(getenv)))
}

func settings(getenv func(string) string) pipeline.ModelSettings {
	if !live(getenv) {
		return pipeline.ModelSettings{}
	}
	return pipeline.ModelSettings{Model: modelName(getenv)}
}

func modelName(getenv func(string) string) string {
	if m := getenv("OPENAI_MODEL"); m != "" {
		return m
	}
	return DefaultModel
}
