package scenario

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestBackendsOpenAfresh checks that every open of a crash-safe backend
// starts from no data, as the raw drivers' opens do: a session appended
// to under one open is gone under the next. A store kept from one open to
// the next carried every earlier scenario's dead rows into the next
// one's timed turns (see backends).
func TestBackendsOpenAfresh(t *testing.T) {
	ctx := context.Background()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			if be.skip != "" {
				t.Skip(be.skip)
			}
			sess, _, closeFn, _ := be.open(t)
			err := sess.Append(ctx, "afresh", "run", []state.Item{state.UserMessage("kept?").WithSeq(1)})
			closeFn()
			if err != nil {
				t.Fatal(err)
			}
			sess, _, closeFn, _ = be.open(t)
			defer closeFn()
			items, err := sess.List(ctx, "afresh", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 0 {
				t.Errorf("the session holds %d items from the previous open, want none", len(items))
			}
		})
	}
}
