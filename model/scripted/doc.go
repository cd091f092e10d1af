// Package scripted provides a deterministic [pipeline.Model] for tests,
// examples and benchmarks: it answers each model call with the next step of
// a script, with no network.
//
//	m := scripted.New(
//		scripted.CallTool("get_weather", `{"city":"Paris"}`),
//		scripted.Reply("It is sunny in Paris."),
//	)
//	agent := &pipeline.Agent{Name: "assistant", Model: m, Tools: tools}
//
// IDs are deterministic and unique per run: on turn t of run r, the k-th
// part of a response is message "msg_r_t_k", reasoning "rs_r_t_k" or call
// "call_r_t_k" (with fc_r_t_k as the call's item ID), in response
// "resp_r_t". So runs that share a session, and the models of one run (a
// handoff), never repeat a call ID, which the Responses API would refuse
// in the history; give runs fixed IDs ([pipeline.WithRunID]) to know
// them in advance. Characters of the run ID other than ASCII letters,
// digits, '-' and '_' become '-'. A model called outside a run (no
// [pipeline.ModelCall.Turn]) numbers its n-th call instead: "call_n_k".
//
// Because of that, a turn replayed after a crash gets the same call IDs
// again, where a real model would answer with new ones: a crash test that
// must see a tool run again under a new call ID (and idempotency key) uses
// [Model.FreshIDs].
//
// [Model.FailNext] queues failures of one run's next calls (a provider's
// transient errors), which take no step of the script.
//
// The model records the calls it received; [Model.Calls] returns copies.
// It is safe for concurrent use; steps are handed out in the order calls
// arrive.
//
// # Rules
//
// A script in call order serves one run in one process. [Rules] answers by
// the call instead: each [Rule] ([On]) matches calls ([ForAgent],
// [LastUserContains], [AfterOutput], [All], or any func of the call) and
// answers them with its steps, its position kept in the run's state. So
// one model serves concurrent runs, several agents, and runs resumed from
// a checkpoint in another process, with no hand-written
// [pipeline.ModelFunc]:
//
//	m := scripted.Rules(
//		scripted.On(scripted.AfterOutput(""), scripted.Reply("Refunded.")),
//		scripted.On(scripted.LastUserContains("refund"), scripted.CallTool("refund", `{"order":"A1"}`)),
//		scripted.On(scripted.ForAgent("faq"), scripted.Reply("See the FAQ.")),
//	)
package scripted
