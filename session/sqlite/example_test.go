package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// A run's final message is held back until its output guardrails pass, so
// it is committed after the tool items it precedes; the session still lists
// every item at its original position, and a retried append is a no-op.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "turnkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(filepath.Join(dir, "chat.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	user := state.UserMessage("What is the weather in Paris?").WithSeq(1)
	call := state.ToolCall("fc_1", "call_1", "weather", `{"city":"Paris"}`).WithSeq(2)
	output := state.ToolOutput("call_1", "weather", "18°C, clear").WithSeq(3)
	answer := state.AssistantMessage("msg_1", "It is 18°C and clear.").WithSeq(4)

	_ = store.Append(ctx, "chat-42", "run-1", []state.Item{user})
	_ = store.Append(ctx, "chat-42", "run-1", []state.Item{call, output})
	_ = store.Append(ctx, "chat-42", "run-1", []state.Item{call, output}) // a retry: no-op
	_ = store.Append(ctx, "chat-42", "run-1", []state.Item{answer})

	items, err := store.List(ctx, "chat-42", 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range items {
		fmt.Println(it.Seq(), it.Kind(), it.Text())
	}
	// Output:
	// 1 user_message What is the weather in Paris?
	// 2 tool_call {"city":"Paris"}
	// 3 tool_output 18°C, clear
	// 4 assistant_message It is 18°C and clear.
}

// The same file keeps run checkpoints; Save is a compare-and-swap on the
// run's version, so of two workers resuming one checkpoint only one wins.
func ExampleStore_Save() {
	dir, err := os.MkdirTemp("", "turnkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()

	if err := store.Save(ctx, state.NewRun("run-1", "assistant")); err != nil {
		log.Fatal(err)
	}
	a, _ := store.Load(ctx, "run-1")
	b, _ := store.Load(ctx, "run-1")
	fmt.Println("first save:", store.Save(ctx, a), "version", a.Version())
	fmt.Println("second save:", store.Save(ctx, b))
	// Output:
	// first save: <nil> version 2
	// second save: state: save run "run-1": version conflict (have version 1, stored 2)
}

// Migration as a step of its own: a deployment job migrates the file, and
// the processes that use it open it WithoutMigrations, which only checks
// the schema version. Opened so before the migration, the file is refused
// at once with ErrNotMigrated.
func ExampleMigrate() {
	dir, err := os.MkdirTemp("", "turnkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "chat.db")

	_, err = sqlite.Open(path, sqlite.WithoutMigrations())
	fmt.Println("before Migrate:", errors.Is(err, sqlite.ErrNotMigrated))

	if err := sqlite.Migrate(context.Background(), path); err != nil { // the deployment step
		log.Fatal(err)
	}
	store, err := sqlite.Open(path, sqlite.WithoutMigrations()) // each worker
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	fmt.Println("after Migrate: opened")
	// Output:
	// before Migrate: true
	// after Migrate: opened
}
