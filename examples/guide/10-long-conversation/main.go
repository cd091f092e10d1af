// Command 10-long-conversation is the guide's last step (docs/guide.md): a
// chat of one short run per user message on one long session, where what
// a message costs does not grow with the conversation.
//
//	go run ./examples/guide/10-long-conversation            # 300 messages, then one that pauses for approval
//	go run ./examples/guide/10-long-conversation -n 5000 -limit 200
//
// Two settings and a default make it so:
//
//   - persistence.WithLimit(n): a run reads only the last n items of the
//     session as its history, from the store's index (session.Store's
//     ListBefore), so what it reads, decodes and sends is O(n);
//   - by default a run's checkpoint refers to that history (session,
//     count, write stamp, digest) instead of copying it, and a resume reads
//     it back with ListBefore (persistence.WithHistoryCopied copies it);
//   - checkpoint.WithRetention(checkpoint.DeleteFinished): a finished run's
//     checkpoint is deleted once its final commit is in the session, so
//     what the conversation stores is the session; a paused run keeps its
//     checkpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

const sessionID = "chat-ada"

func main() {
	n := flag.Int("n", 300, "messages before the one that pauses")
	limit := flag.Int("limit", 200, "items of history a run reads")
	flag.Parse()
	dir, err := os.MkdirTemp("", "turnkit-chat-")
	if err == nil {
		defer os.RemoveAll(dir)
		err = run(context.Background(), os.Stdout, filepath.Join(dir, "chat.db"), *n, *limit)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "10-long-conversation:", err)
		os.Exit(1)
	}
}

// BookArgs are the arguments of the book tool.
type BookArgs struct {
	Time string `json:"time"`
}

func newAgent() *pipeline.Agent {
	book := tool.Func("book", "Books a table.", func(ctx context.Context, in BookArgs) (string, error) {
		return "booked for " + in.Time, nil
	})
	return &pipeline.Agent{
		Name:         "concierge",
		Instructions: "You keep notes for the user, and book tables when asked.",
		Model: exmodel.Or(scripted.Rules(
			scripted.On(scripted.AfterOutput(""), scripted.Reply("Your table is booked for 8 pm.")),
			scripted.On(scripted.LastUserContains("book"), scripted.CallTool("book", `{"time":"20:00"}`)),
			scripted.On(scripted.Any(), scripted.Reply("Noted.")),
		)),
		Settings: exmodel.Settings(),
		Tools:    []pipeline.Tool{book},
	}
}

// newRunner returns the crash-safe chain with the long-conversation
// settings, on store; a run reads the last limit items of the session.
func newRunner(store *sqlite.Store, limit int) *pipeline.Runner {
	cp := checkpoint.New(store, checkpoint.WithRetention(checkpoint.DeleteFinished),
		checkpoint.WithSession(store, persistence.WithLimit(limit)))
	return pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Checkpoint: cp.Middleware(),
		Approval:   approval.Require(approval.ByTool("book")),
	}.Middleware()...))
}

func run(ctx context.Context, w io.Writer, dbPath string, n, limit int) error {
	store, err := sqlite.Open(dbPath)
	if err != nil {
		return err
	}
	defer store.Close()
	runner, agent := newRunner(store, limit), newAgent()
	for i := 1; i <= n; i++ { // one run per user message
		_, err := runner.Run(ctx, agent, pipeline.UserInput(fmt.Sprintf("Note %d: buy milk.", i)),
			pipeline.WithSessionID(sessionID), pipeline.WithRunID(fmt.Sprintf("msg-%d", i)))
		if err != nil {
			return err
		}
	}
	items, err := store.List(ctx, sessionID, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after %d messages the session holds %d items\n", n, len(items))
	if _, err := store.Load(ctx, "msg-1"); errors.Is(err, state.ErrNotFound) {
		fmt.Fprintln(w, "finished runs keep no checkpoint (DeleteFinished)")
	}

	res, err := runner.Run(ctx, agent, pipeline.UserInput("Please book a table for tonight."),
		pipeline.WithSessionID(sessionID), pipeline.WithRunID("msg-book"))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the booking run pauses for approval of %s\n", res.Interruptions()[0].Tool)

	// Later, perhaps in another process: load, decide, resume.
	paused, err := store.Load(ctx, "msg-book")
	if err != nil {
		return err
	}
	if sid, count, _, ok := paused.HistoryRef(); ok {
		fmt.Fprintf(w, "its checkpoint refers to %d items of session %s instead of copying them\n", count, sid)
	}
	before, err := store.ListBefore(ctx, sessionID, "msg-book", session.HistoryQuery{Limit: 2})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the last items before it (ListBefore): %q, %q\n", before.Items[0].Text(), before.Items[1].Text())
	if err := paused.Approve(res.Interruptions()[0].CallID); err != nil {
		return err
	}
	res, err = runner.Resume(ctx, agent, paused)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "resumed:", res.FinalOutput())
	if _, err := store.Load(ctx, "msg-book"); errors.Is(err, state.ErrNotFound) {
		fmt.Fprintln(w, "and its checkpoint is gone: the session is the conversation")
	}
	return nil
}
