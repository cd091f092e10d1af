package encrypt_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// ExampleWrap keeps a session encrypted at rest in SQLite, then erases it.
func ExampleWrap() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "encrypt-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	provider := encrypt.NewMemoryProvider("kek-2026") // in production: your KMS

	kr := encrypt.NewKeyring(provider)
	db, err := sqlite.Open(filepath.Join(dir, "chat.db"), sqlite.WithCodec(kr.Codec()))
	if err != nil {
		log.Fatal(err)
	}
	store := encrypt.Wrap(db, kr) // use store where db was used
	defer store.Close()

	err = store.Append(ctx, "user-42", "run-1", []state.Item{state.UserMessage("my card is 4111 1111").WithSeq(1)})
	if err != nil {
		log.Fatal(err)
	}
	items, err := store.List(ctx, "user-42", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("read back:", items[0].Text())

	report, err := store.Erase(ctx, "user-42", encrypt.Shred())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("erased %d item(s), %d run(s), data key shredded: %v\n", report.Items, report.Runs, report.Shredded)
	// Output:
	// read back: my card is 4111 1111
	// erased 1 item(s), 0 run(s), data key shredded: true
}
