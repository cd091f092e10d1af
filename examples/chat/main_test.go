package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// The tests check the scripted model's output: never reach OpenAI from them.
func TestMain(m *testing.M) {
	os.Unsetenv("OPENAI_API_KEY")
	goleak.VerifyTestMain(m)
}

// TestRunContinuesTheConversation runs the command twice on one SQLite
// file: the second run starts from the first one's conversation.
func TestRunContinuesTheConversation(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chat.db")
	ctx := context.Background()
	var first bytes.Buffer
	if err := run(ctx, &first, []string{"-db", db, "Hi, I'm Ada.", "What time is it?"}); err != nil {
		t.Fatal(err)
	}
	wantFirst := "> Hi, I'm Ada.\nNice to meet you, Ada.\n> What time is it?\nIt is 12:00.\n"
	if d := cmp.Diff(wantFirst, first.String()); d != "" {
		t.Errorf("first run (-want +got):\n%s", d)
	}
	var second bytes.Buffer
	if err := run(ctx, &second, []string{"-db", db, "-transcript", "Do you remember my name?"}); err != nil {
		t.Fatal(err)
	}
	wantSecond := `> Do you remember my name?
Of course, Ada. This is message 3 of our conversation.
session chat (8 items):
  user_message      Hi, I'm Ada.
  assistant_message Nice to meet you, Ada.
  user_message      What time is it?
  tool_call         clock {}
  tool_output       12:00
  assistant_message It is 12:00.
  user_message      Do you remember my name?
  assistant_message Of course, Ada. This is message 3 of our conversation.
`
	if d := cmp.Diff(wantSecond, second.String()); d != "" {
		t.Errorf("second run (-want +got):\n%s", d)
	}
	var reset bytes.Buffer
	if err := run(ctx, &reset, []string{"-db", db, "-reset", "Do you remember my name?"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("> Do you remember my name?\nYou haven't told me your name yet.\n", reset.String()); d != "" {
		t.Errorf("after -reset (-want +got):\n%s", d)
	}
}

// TestRunOnSharedServers runs the conversation on PostgreSQL and Redis
// when their URLs are set.
func TestRunOnSharedServers(t *testing.T) {
	for _, tt := range []struct{ flag, env string }{{"-postgres", "TURNKIT_POSTGRES_URL"}, {"-redis", "TURNKIT_REDIS_URL"}} {
		t.Run(tt.flag, func(t *testing.T) {
			url := os.Getenv(tt.env)
			if url == "" {
				if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
					t.Fatalf("%s is not set", tt.env)
				}
				t.Skipf(`%s is not set; run eval "$(.ci/services start)" to start the servers`, tt.env)
			}
			ctx := context.Background()
			sessionID := "example-chat-" + filepath.Base(t.TempDir())
			var out bytes.Buffer
			if err := run(ctx, &out, []string{tt.flag, url, "-session", sessionID, "-reset", "Hi, I'm Ada."}); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := run(ctx, &out, []string{tt.flag, url, "-session", sessionID, "Do you remember my name?"}); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff("> Do you remember my name?\nOf course, Ada. This is message 2 of our conversation.\n", out.String()); d != "" {
				t.Errorf("second run (-want +got):\n%s", d)
			}
		})
	}
}

// TestChain runs the conversation with -chain: from the second message
// on, each message continues the last response and sends only itself.
func TestChain(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chat.db")
	var out bytes.Buffer
	if err := run(context.Background(), &out, []string{"-db", db, "-chain", "Hi, I'm Ada.", "What time is it?", "Do you remember my name?"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^> Hi, I'm Ada\.$`), regexp.MustCompile(`^Nice to meet you, Ada\.$`), regexp.MustCompile(`^  \(sends 1 item\)$`),
		regexp.MustCompile(`^> What time is it\?$`), regexp.MustCompile(`^It is 12:00\.$`),
		regexp.MustCompile(`^  \(continues resp_\S+: sends 1 of the 3 items the model sees\)$`),
		regexp.MustCompile(`^> Do you remember my name\?$`), regexp.MustCompile(`^Of course, Ada\. This is message 3 of our conversation\.$`),
		regexp.MustCompile(`^  \(continues resp_\S+: sends 1 of the 7 items the model sees\)$`),
	}
	if len(lines) < len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %s", i+1, lines[i], re)
		}
	}
}

// TestCompact runs a conversation with -compact 6: no message sends more
// than 6 items, a summary stands for the older ones and still knows the
// user's name, and the session keeps every item.
func TestCompact(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chat.db")
	var out bytes.Buffer
	args := []string{"-db", db, "-compact", "6", "-transcript", "Hi, I'm Ada.", "Hello again.", "What time is it?", "Hello again.", "Do you remember my name?"}
	if err := run(context.Background(), &out, args); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, m := range regexp.MustCompile(`\(sends (\d+) items?`).FindAllStringSubmatch(got, -1) {
		if n, _ := strconv.Atoi(m[1]); n > 6 {
			t.Errorf("a message sent %d items, over 6:\n%s", n, got)
		}
	}
	for _, want := range []string{
		"Of course, Ada. This is message 5 of our conversation.\n  (sends 2 items, the first a summary)\n",
		"session chat (12 items):",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
