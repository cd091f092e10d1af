package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "") // the scripted model: the output is known
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "chat.db"), 30, 20); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"after 30 messages the session holds 60 items",
		"finished runs keep no checkpoint (DeleteFinished)",
		"the booking run pauses for approval of book",
		"its checkpoint refers to 20 items of session chat-ada instead of copying them",
		`the last items before it (ListBefore): "Note 30: buy milk.", "Noted."`,
		"resumed: Your table is booked for 8 pm.",
		"and its checkpoint is gone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
