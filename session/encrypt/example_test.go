package encrypt_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// ExampleWrapSessions seals a session kept in memory (session/memory,
// with its checkpoints and the data keys in state/memstore), shows that
// the store underneath holds no plaintext, and erases the session. A
// database backend is wired the same way with [encrypt.Wrap].
func ExampleWrapSessions() {
	ctx := context.Background()
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-2026")) // in production: your KMS

	plainItems := memory.New()
	runs := encrypt.WrapRuns(memstore.New(memstore.WithCodec(kr.Codec())), kr, nil) // keeps the data keys
	sessions := encrypt.WrapSessions(plainItems, kr)
	defer sessions.Close()

	err := sessions.Append(ctx, "user-42", "run-1", []state.Item{state.UserMessage("my card is 4111 1111").WithSeq(1)})
	if err != nil {
		log.Fatal(err)
	}
	items, err := sessions.List(ctx, "user-42", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("read back:", items[0].Text())

	stored, err := plainItems.List(ctx, "user-42", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored as", stored[0].Kind(), "with the card number in the clear:", strings.Contains(string(stored[0].Raw()), "4111"))

	report, err := encrypt.Erase(ctx, sessions, runs, "user-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("erased %d item(s), %d run(s)\n", report.Items, report.Runs)
	// Output:
	// read back: my card is 4111 1111
	// stored as user_message with the card number in the clear: false
	// erased 1 item(s), 0 run(s)
}
