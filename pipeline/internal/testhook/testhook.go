// Package testhook hands package pipelinetest the parts of package
// pipeline's core that pipeline does not export: making a turn as the
// runner makes one, placing a model response as the core places one, and
// making the model call the runner would make. With them pipelinetest
// builds its turns on the core's own code, so the two cannot drift, and
// pipeline's API carries no test hooks.
//
// Package pipeline sets the variables in its init; pipelinetest
// type-asserts them once, when it is initialised, so a signature that
// changes on one side only fails every pipelinetest test at once. They are
// typed any because testhook cannot import pipeline (pipeline imports it),
// as in grpc-go's internal package. Nothing else may set or call them.
package testhook

// The hooks, each documented with the dynamic type pipeline stores in it.
var (
	// NewTurn is a
	//
	//	func(run *state.Run, agent *pipeline.Agent, number int, emit func(pipeline.Event)) *pipeline.Turn
	//
	// returning the turn the runner would hand the turn stage before its
	// inner stages ran. A non-nil emit makes the turn stream.
	NewTurn any

	// PlaceResponse is a
	//
	//	func(t *pipeline.Turn, resp *pipeline.ModelResponse) error
	//
	// doing with resp what the core does with a model stage's response:
	// place its items in t.Run (re-kinding handoff calls, reserving an
	// output position per call, setting the response boundary), then set
	// t.Response, t.Calls, t.Results (all nil) and what t.MayEndRun
	// reports, as the tool stage sees them. It records no usage and emits
	// no events. resp's items are placed in place.
	PlaceResponse any

	// NewModelCall is a
	//
	//	func(t *pipeline.Turn) *pipeline.ModelCall
	//
	// returning the model call the runner would make for t, with the
	// agent's static instructions.
	NewModelCall any

	// NewRunCall is a
	//
	//	func(run *state.Run, agent *pipeline.Agent, input []state.Item, emit func(pipeline.Event)) *pipeline.RunCall
	//
	// returning the request the runner hands the run stage. A non-nil emit
	// makes the run stream.
	NewRunCall any

	// NewResult is a
	//
	//	func(run *state.Run, agent *pipeline.Agent) *pipeline.Result
	//
	// returning the result of run, served last by agent, with the run's
	// final output (if it finished) and its pending approvals as
	// interruptions, and no new items.
	NewResult any
)
