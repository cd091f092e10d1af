package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// TestSaveAppendListsTheSession checks that a session a SaveAppend
// creates (one script with the checkpoint on a standalone server) is
// listed, with its run on its items' page.
func TestSaveAppendListsTheSession(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		s := newStore(t, client, redis.WithPrefix(prefix))
		sid := "listed-" + newRunID()
		run := state.NewRun(newRunID(), "agent")
		runcore.SetSessionID(run, sid)
		if err := s.SaveAppend(t.Context(), run, sid, []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
			t.Fatal(err)
		}
		page, err := s.ListSessions(t.Context(), session.SessionQuery{Prefix: sid})
		if err != nil || len(page.IDs) != 1 || page.IDs[0] != sid {
			t.Fatalf("ListSessions(prefix %q) = %+v, %v; want the session", sid, page, err)
		}
		items, err := s.ListPage(t.Context(), sid, session.PageQuery{})
		if err != nil || len(items.Entries) != 1 || items.Entries[0].RunID != run.ID() || items.Entries[0].Place != 1 {
			t.Fatalf("ListPage = %+v, %v; want the item of run %s at place 1", items, err, run.ID())
		}
	})
}
