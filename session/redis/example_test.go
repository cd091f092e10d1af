package redis_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// Workers share sessions and checkpoints through one Redis. The example
// needs a server (TURNKIT_REDIS_URL), so it is compiled, not run.
func ExampleOpen() {
	ctx := context.Background()
	store, err := redis.Open(ctx, os.Getenv("TURNKIT_REDIS_URL"), redis.WithPrefix("chat:"))
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
