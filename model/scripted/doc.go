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
// IDs are deterministic: the n-th step (from 1) produces message "msg_n_k",
// reasoning "rs_n_k" and call "call_n_k" for its k-th part. The model
// records the calls it received; [Model.Calls] returns copies. It is safe
// for concurrent use; steps are handed out in the order calls arrive.
package scripted
