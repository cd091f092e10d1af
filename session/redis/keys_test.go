package redis_test

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// braceIDs are IDs that would cut short, empty or move the hash tag of a
// key if they were put in it as they are, and IDs without braces that look
// like their escaped forms.
var braceIDs = []string{"a}b", "a}c", "}x", "}", "{}", "x{", "a{b}c", "{{}}", "%7D", "a%7Db", "a%257Db", "plain"}

// hashTag returns the part of key that Redis Cluster hashes: the text
// between the first "{" and the first "}" after it, if not empty, else
// the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// TestKeysOfIDs checks the keys of sessions and runs: IDs without braces
// keep the keys they always had; every ID's keys share one non-empty hash
// tag that holds the whole ID, escaped if it has braces; no two IDs share
// a key, and no two IDs with braces a tag ("a}b" and "a}c" would share
// "a" unescaped).
func TestKeysOfIDs(t *testing.T) {
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	s := redis.New(client, redis.WithPrefix("p:"))
	seenKey := map[string]string{}
	seenTag := map[string]string{}
	for _, id := range braceIDs {
		sk, rk := s.SessionKeys(id), s.RunKeys(id)
		if !strings.ContainsAny(id, "{}") {
			if want := "p:session:{" + id + "}:items"; sk[0] != want {
				t.Errorf("session %q: items key %q, want %q as before", id, sk[0], want)
			}
			if want := "p:checkpoint:{" + id + "}"; rk[0] != want {
				t.Errorf("run %q: head key %q, want %q as before", id, rk[0], want)
			}
		}
		for what, keys := range map[string][]string{"session": sk, "checkpoint": rk} {
			want := id
			if strings.ContainsAny(id, "{}") {
				want = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(id)
			}
			if tag := hashTag(keys[0]); tag != want {
				t.Errorf("%s %q: hash tag %q of %q, want %q", what, id, tag, keys[0], want)
			}
			tag := want
			for _, k := range keys {
				if hashTag(k) != tag {
					t.Errorf("%s %q: keys %q and %q have different hash tags", what, id, keys[0], k)
				}
				if other, ok := seenKey[k]; ok {
					t.Errorf("%s %q and %q share the key %q", what, id, other, k)
				}
				seenKey[k] = id
			}
			if !strings.ContainsAny(id, "{}") {
				continue // "a%7Db" shares its tag (a slot, not a key) with "a}b"
			}
			if other, ok := seenTag[what+" "+tag]; ok {
				t.Errorf("%s %q and %q share the hash tag %q", what, id, other, tag)
			}
			seenTag[what+" "+tag] = id
		}
	}
}

// TestBraceIDs uses every session and run operation with IDs that hold
// braces; on the cluster a session's keys, and a run's, must be in one
// slot (a script or a MULTI over two slots fails with CROSSSLOT), and
// sessions whose IDs share a prefix up to a brace stay apart.
func TestBraceIDs(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		ctx := t.Context()
		s := newStore(t, client, redis.WithPrefix(prefix))
		for _, id := range braceIDs {
			items := []state.Item{state.UserMessage("hi " + id).WithSeq(1), state.AssistantMessage("m", "hello").WithSeq(2)}
			must(t, s.Append(ctx, id, "r0", items))
			r := state.NewRun(id, "assistant")
			addTurn(t, r, 1)
			must(t, s.SaveAppend(ctx, r, id, r.Items().Slice()))
			wantSame(t, s, r)
			if cc, ok := client.(*goredis.ClusterClient); ok {
				for _, keys := range [][]string{s.SessionKeys(id), s.RunKeys(id)} {
					want := cc.ClusterKeySlot(ctx, keys[0]).Val()
					for _, k := range keys[1:] {
						if got := cc.ClusterKeySlot(ctx, k).Val(); got != want {
							t.Errorf("ID %q: key %q is in slot %d, %q in %d", id, keys[0], want, k, got)
						}
					}
				}
			}
		}
		for _, id := range braceIDs {
			got, err := s.List(ctx, id, 0)
			must(t, err)
			if len(got) != 4 || got[0].Text() != "hi "+id {
				t.Errorf("session %q lists %v, want its own 4 items", id, got)
			}
			if it, ok, err := s.Lookup(ctx, id, "r0", 1); err != nil || !ok || it.Text() != "hi "+id {
				t.Errorf("Lookup in session %q = %v, %v, %v", id, it, ok, err)
			}
			if _, ok, err := s.Pop(ctx, id); err != nil || !ok {
				t.Errorf("Pop from session %q = %v, %v", id, ok, err)
			}
			must(t, s.Clear(ctx, id))
			must(t, s.Delete(ctx, id))
			for _, keys := range [][]string{s.ClearedKeys(id), s.RunKeys(id)} {
				if n, err := client.Exists(ctx, keys...).Result(); err != nil || n != 0 {
					t.Errorf("ID %q: %d of %q left after Clear and Delete (%v)", id, n, keys, err)
				}
			}
		}
	})
}
