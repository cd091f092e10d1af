// Command chat is a multi-turn conversation that lives in a session: each
// message given on the command line is one run, and every run starts from
// the conversation so far. The session is stored in a SQLite file (the
// embedded default), so running the command again continues the same
// conversation; -postgres or -redis point it at a shared server instead.
//
//	go run ./examples/chat "Hi, I'm Ada." "What time is it?"
//	go run ./examples/chat "Do you remember my name?"
//	go run ./examples/chat -reset
//
// Two flags bound what each message sends to the model as the conversation
// grows; each prints, under the answer, what the model was sent:
//
//	go run ./examples/chat -chain "Hi, I'm Ada." "What time is it?"
//	go run ./examples/chat -compact 6 "Hi, I'm Ada." "Hello again." "Do you remember my name?"
//
// -chain continues the last response on the server (Responses API
// previous_response_id, openai.ChainResponses): the session remembers it
// (persistence.WithContinuation), and the next message sends only itself.
// -compact N replaces the older part of the conversation with a summary
// when the model would see more than N items (the compaction middleware);
// the session still keeps every item, and the next message starts from
// the summary.
//
// It runs offline on a small deterministic model that reads the history it
// is given; with OPENAI_API_KEY set it talks to OpenAI instead (and the
// summaries are OpenAI's).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(w)
	dbPath := fs.String("db", "chat.db", "SQLite file that holds the conversation")
	pgURL := fs.String("postgres", "", "PostgreSQL URL; stores the conversation there instead of -db")
	redisURL := fs.String("redis", "", "Redis URL; stores the conversation there instead of -db")
	sessionID := fs.String("session", "chat", "conversation (session) ID")
	limit := fs.Int("limit", 0, "read only the last N items of the conversation (0: all)")
	reset := fs.Bool("reset", false, "forget the conversation first")
	transcript := fs.Bool("transcript", false, "print the stored conversation at the end")
	chain := fs.Bool("chain", false, "continue the model's last response on the server across messages (Responses API)")
	compact := fs.Int("compact", 0, "summarise the older conversation when the model would see more than N items (0: never)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	store, err := openStore(ctx, *dbPath, *pgURL, *redisURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if *reset {
		if err := store.Clear(ctx, *sessionID); err != nil {
			return err
		}
	}

	// OpenAI when OPENAI_API_KEY is set (model from OPENAI_MODEL), else offline.
	model := exmodel.Or(pipeline.ModelFunc(offlineModel))
	clock := pipeline.NewTool(pipeline.ToolSpec{Name: "clock", Description: "Tells the time."},
		func(context.Context, json.RawMessage) (string, error) { return "12:00", nil })
	agent := &pipeline.Agent{
		Name:         "assistant",
		Instructions: "You are a friendly assistant. Use the clock tool to tell the time.",
		Model:        model,
		Tools:        []pipeline.Tool{clock},
	}
	popts := []persistence.Option{persistence.WithLimit(*limit)}
	var runOpts []pipeline.RunOption
	if *chain || *compact > 0 {
		// The session remembers the last response and the summary's
		// boundary, so the next message continues from them.
		popts = append(popts, persistence.WithContinuation())
	}
	if *chain {
		runOpts = append(runOpts, openai.ChainResponses())
	}
	mws := []pipeline.Middleware{persistence.Middleware(store, popts...)}
	if *compact > 0 {
		summarizer := exmodel.Or(pipeline.ModelFunc(offlineSummary))
		mws = append(mws, compaction.Middleware(compaction.Summarize(summarizer), compaction.WithMaxItems(*compact)))
	}
	var note string
	if *chain || *compact > 0 {
		mws = append(mws, sent(&note, *chain))
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(mws...))

	for _, text := range fs.Args() {
		note = ""
		res, err := runner.Run(ctx, agent, pipeline.UserInput(text), append(runOpts, pipeline.WithSessionID(*sessionID))...)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "> %s\n%s\n%s", text, res.FinalOutput(), note)
	}
	if *transcript {
		items, err := store.List(ctx, *sessionID, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "session %s (%d items):\n", *sessionID, len(items))
		for _, it := range items {
			text := it.Text()
			if it.Kind() == state.KindToolCall {
				text = it.Name() + " " + text
			}
			fmt.Fprintf(w, "  %-17s %s\n", it.Kind(), text)
		}
	}
	return nil
}

func openStore(ctx context.Context, dbPath, pgURL, redisURL string) (session.Store, error) {
	switch {
	case pgURL != "" && redisURL != "":
		return nil, errors.New("give -postgres or -redis, not both")
	case pgURL != "":
		return postgres.Open(ctx, pgURL)
	case redisURL != "":
		return redis.Open(ctx, redisURL)
	}
	return sqlite.Open(dbPath)
}

// offlineModel is a deterministic stand-in for a real model that uses what
// persistence gives it: it remembers the name the user gave in any earlier
// run of the session, counts the conversation so far, and calls the clock
// when asked for the time.
func offlineModel(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	var name, last string
	users := 0
	var lastItem state.Item
	for _, it := range c.Input.All() {
		lastItem = it
		if it.Kind() == state.KindSystemMessage { // a summary (-compact)
			if _, after, ok := strings.Cut(it.Text(), "I'm "); ok {
				name, _, _ = strings.Cut(after, ".")
			}
			users += strings.Count(it.Text(), " | ") + 1
			continue
		}
		if it.Kind() != state.KindUserMessage {
			continue
		}
		users++
		last = it.Text()
		if _, after, ok := strings.Cut(it.Text(), "I'm "); ok {
			name = strings.TrimRight(after, ".!")
		}
	}
	n := c.Turn.Run.Len() + c.Input.Len() // unique item IDs per call
	id := func(kind string) string { return fmt.Sprintf("%s_%s_%d", kind, c.Turn.Run.ID()[:8], n) }
	switch {
	case lastItem.Kind() == state.KindToolOutput:
		return reply(id("msg"), "It is "+lastItem.Text()+"."), nil
	case strings.Contains(strings.ToLower(last), "time"):
		call := state.ToolCall(id("fc"), id("call"), "clock", "{}")
		return &pipeline.ModelResponse{Items: []state.Item{call}}, nil
	case strings.Contains(strings.ToLower(last), "remember") && name != "":
		return reply(id("msg"), fmt.Sprintf("Of course, %s. This is message %d of our conversation.", name, users)), nil
	case strings.Contains(strings.ToLower(last), "remember"):
		return reply(id("msg"), "You haven't told me your name yet."), nil
	case name != "" && strings.Contains(last, "I'm "):
		return reply(id("msg"), "Nice to meet you, "+name+"."), nil
	}
	return reply(id("msg"), fmt.Sprintf("Noted. This is message %d of our conversation.", users)), nil
}

func reply(id, text string) *pipeline.ModelResponse {
	return &pipeline.ModelResponse{ID: "resp" + strings.TrimPrefix(id, "msg"), Items: []state.Item{state.AssistantMessage(id, text)}}
}

// sent is a model-stage middleware that notes, for the first model call of
// each message, what the model is sent: the items after the response the
// session remembers (with -chain), and whether a summary stands for the
// older conversation (with -compact).
func sent(note *string, chain bool) pipeline.Middleware {
	return pipeline.Middleware{Name: "sent", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			if *note == "" {
				n := c.Input.Len()
				summary := ""
				if n > 0 && strings.HasPrefix(c.Input.At(0).Text(), compaction.SummaryPrefix) {
					summary = ", the first a summary"
				}
				switch cont, ok, err := pipeline.ContinuationOf(c.Turn.Run); {
				case err != nil:
					return nil, err
				case chain && ok && cont.Seen <= n:
					*note = fmt.Sprintf("  (continues %s: sends %d of the %s the model sees%s)\n", cont.ResponseID, n-cont.Seen, items(n), summary)
				default:
					*note = fmt.Sprintf("  (sends %s%s)\n", items(n), summary)
				}
			}
			return next.Respond(ctx, c)
		})
	}}
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// offlineSummary is the offline summarizer: it keeps what the user said.
func offlineSummary(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	var said []string
	for _, it := range c.Input.All() {
		switch {
		case it.Kind() == state.KindUserMessage:
			said = append(said, it.Text())
		case strings.HasPrefix(it.Text(), compaction.SummaryPrefix):
			said = append(said, strings.TrimPrefix(it.Text(), compaction.SummaryPrefix))
		}
	}
	return reply("msg_summary", "The user said: "+strings.Join(said, " | ")), nil
}
