package state_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A checkpoint is JSON; Unmarshal in another process returns a run that
// resumes as the original would.
func ExampleMarshal() {
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Reply("hi"))}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("hello"), pipeline.WithRunID("run_1"))
	if err != nil {
		panic(err)
	}
	data, err := state.Marshal(res.State())
	if err != nil {
		panic(err)
	}
	back, err := state.Unmarshal(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.ID(), back.Agent(), back.Len(), back.Items().At(0).Text(), back.Items().At(1).Text())
	// Output: run_1 assistant 2 hello hi
}

// With a signing key, any edit of the checkpoint is refused; passing the
// old and the new key verifies both during a rotation.
func ExampleWithSigningKey() {
	oldKey, newKey := []byte("the old key, 32 bytes long......"), []byte("the new key, 32 bytes long......")
	data, _ := state.Marshal(state.NewRun("run_1", "assistant"), state.WithSigningKey("2025-q4", oldKey))
	keys := state.WithVerifyKeys(map[string][]byte{"2025-q4": oldKey, "2026-q1": newKey})
	_, err := state.Unmarshal(data, keys)
	fmt.Println("signed:", err)
	data[len(data)/2] ^= 1
	_, err = state.Unmarshal(data, keys)
	fmt.Println("edited is tampered:", err != nil)
	// Output:
	// signed: <nil>
	// edited is tampered: true
}
