package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// Workers share sessions and checkpoints through one database. The example
// needs a server (TURNKIT_POSTGRES_URL), so it is compiled, not run.
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("TURNKIT_POSTGRES_URL"), postgres.WithSchema("chat"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	items := []state.Item{
		state.UserMessage("What is the weather in Paris?").WithSeq(1),
		state.AssistantMessage("msg_1", "It is 18°C and clear.").WithSeq(2),
	}
	if err := store.Append(ctx, "chat-42", "run-1", items); err != nil {
		log.Fatal(err)
	}
	history, err := store.List(ctx, "chat-42", 10) // the last 10 items
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range history {
		fmt.Println(it.Seq(), it.Kind(), it.Text())
	}
}

// Migration as a step of its own, as River's is: a deployment job runs
// Migrate, and the workers open their stores WithoutMigrations, which only
// check the schema version and fail at once with ErrNotMigrated when the
// step has not run. The example needs a server (TURNKIT_POSTGRES_URL), so
// it is compiled, not run.
func ExampleMigrate() {
	ctx := context.Background()
	url := os.Getenv("TURNKIT_POSTGRES_URL")

	// The deployment step.
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	err = postgres.Migrate(ctx, pool, postgres.WithSchema("chat"))
	pool.Close()
	if err != nil {
		log.Fatal(err)
	}

	// Each worker.
	store, err := postgres.Open(ctx, url, postgres.WithSchema("chat"), postgres.WithoutMigrations())
	if errors.Is(err, postgres.ErrNotMigrated) {
		log.Fatal("run the migration step first: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
}
