package pipeline

import (
	"encoding/json"
	"slices"

	"github.com/turnkit/turnkit/state"
)

// toolChoiceKey is the extension key under which a run records the agents
// whose forced tool choice was used, so that a resumed run, in any
// process, keeps them on auto.
const toolChoiceKey = "turnkit.tool_choice"

// WithToolChoiceKept keeps a forced tool choice on every turn. By default
// an agent whose ModelSettings.ToolChoice forces a call ("required", or a
// tool's name) has it on its model calls until a response of its makes a
// call; from then on, for the rest of the run, its calls go out with
// "auto", so that a forced choice cannot make the model call tools until
// the run reaches its turn limit. The run's state records which agents
// went back to auto, so a resumed run does the same in any process. A
// choice naming a tool that a [Condition] disabled on the turn goes out as
// "auto" either way.
func WithToolChoiceKept() Option {
	return optionFunc(func(c *config) { c.keepToolChoice = true })
}

// forcedChoice reports whether a tool choice forces a call.
func forcedChoice(choice string) bool {
	return choice != "" && choice != "auto" && choice != "none"
}

// choiceUsed reports whether the run recorded that agent's forced choice
// as used.
func choiceUsed(run *state.Run, agent string) bool {
	raw, ok := run.Extension(toolChoiceKey)
	if !ok {
		return false
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return false
	}
	return slices.Contains(names, agent)
}

// resetToolChoice sets the tool choice of model call c to auto when its
// agent forces a call and already made one in the run, and when it names
// a tool that a condition disabled on the turn (the model could not call
// it), kept or not.
func (r *Runner) resetToolChoice(t *Turn, c *ModelCall) {
	choice := c.Settings.ToolChoice
	if !forcedChoice(choice) {
		return
	}
	if choice != "required" && !t.ToolEnabled(choice) {
		c.Settings.ToolChoice = "auto"
		return
	}
	if !r.cfg.keepToolChoice && choiceUsed(t.Run, t.Agent.Name) {
		c.Settings.ToolChoice = "auto"
	}
}

// noteToolChoice records that the agent of turn t used its forced tool
// choice, when it forces one and its response makes a call.
func (r *Runner) noteToolChoice(t *Turn, c *ModelCall, resp *ModelResponse) {
	if r.cfg.keepToolChoice || !forcedChoice(c.Settings.ToolChoice) {
		return
	}
	if !slices.ContainsFunc(resp.Items, func(it state.Item) bool { return it.Kind().IsCall() }) {
		return
	}
	var names []string
	if raw, ok := t.Run.Extension(toolChoiceKey); ok {
		_ = json.Unmarshal(raw, &names) // an unreadable record starts again
	}
	if slices.Contains(names, t.Agent.Name) {
		return
	}
	b, _ := json.Marshal(append(names, t.Agent.Name)) // strings always marshal
	t.Run.SetExtension(toolChoiceKey, b)
}
