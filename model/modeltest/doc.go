// Package modeltest is the conformance suite every [pipeline.Model]
// adapter passes, the way session/sessiontest checks a session.Store.
//
// The suite describes each case as a provider-neutral scenario: the run's
// input, and for each model call the answer the model gives ([Turn]: a
// message, function calls, a refusal, usage, an API error, a stream cut
// short). An adapter's test supplies a [Harness]: a constructor of the
// model under test, whose real SDK client is pointed at the suite's
// [Server], and the provider's recorded answer to each call of a case,
// plain and streamed, in the provider's documented wire shape. The suite
// runs each case through a [pipeline.Runner], the tools and the output
// type it defines, and checks what the run recorded against the scenario.
//
//	func TestConformance(t *testing.T) {
//		modeltest.Run(t, modeltest.Harness{
//			New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
//				return myprovider.New(myprovider.NewClient(srv.URL, srv.Client()), myprovider.WithModel("m"))
//			},
//			Reply: func(t *testing.T, r *modeltest.Request) modeltest.Reply {
//				return recordedAnswer(t, r.Case.Name, r.Turn, r.Stream)
//			},
//		})
//	}
//
// A model that sends no HTTP request (model/scripted) leaves Reply nil and
// builds its answers from the case in New; the suite's checks of what was
// sent are skipped for it.
//
// # What it checks
//
// A function call round trip (the output answers the call by its ID, the
// next request carries both); parallel calls, answered in call order; a
// streamed run that records the same items, output and usage as a plain
// one, its [pipeline.TextDelta] events joining into the message text;
// structured output that decodes, and that does not (a
// [*pipeline.OutputError] at the bad field) or is refused (a
// [*pipeline.RefusalError]); an image in the user input and in a tool's
// output, whose bytes reach the provider; API errors as
// [*pipeline.ModelError] with the status, the provider's request ID, and
// Retryable for 429 and 5xx but not 400; a stream cancelled mid-way,
// which returns the context's error without waiting for the provider;
// usage summed over the calls, input tokens read from and written to the
// prompt cache included ([Harness.NoCacheWrites] for a provider that
// reports no cache writes).
//
// A provider that cannot take a feature (Chat Completions' tool messages
// take no image) lists it in [Harness.Unsupported]: the suite then checks
// that the model refuses the call with an error before sending the
// request that would carry it, never dropping the content silently.
//
// # Writing a harness
//
// Reply is called on the server's goroutine, once per request, with the
// case, the index of the turn (the model call) it answers, whether the run
// streams, and the request's body. It returns what the provider sends:
// a body built from the turn in the provider's documented shape (a
// recorded payload), the provider's error body and request ID header for
// [Turn.Err], and for [Turn.Cut] the first events of the stream, up to
// and including one text delta, with [Reply.Hold] set. Being on another
// goroutine, Reply reports a problem with t.Errorf, never t.Fatal. New
// must return a model whose client does not retry (the error cases count
// requests) and that knows its model name.
package modeltest
