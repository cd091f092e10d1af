package encrypt_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/state/statetest"
)

// An erasable is a backend opened for the erasure test: its stores (with
// kr's codec when kr is not nil) and a search of everything it keeps at
// rest for any of needles, which returns what it found where.
type erasable struct {
	sessions session.Store
	runs     state.Store
	backend  encrypt.Backend // nil for memory
	search   func(t *testing.T, needles [][]byte) []string
}

func openErasable(t *testing.T, name string, kr *encrypt.Keyring) erasable {
	var m []state.MarshalOption
	var u []state.UnmarshalOption
	if kr != nil {
		m, u = kr.Codec()
	}
	switch name {
	case "memory":
		s := memory.New()
		return erasable{sessions: s, runs: memstore.New(memstore.WithCodec(m, u))}
	case "sqlite":
		path := filepath.Join(t.TempDir(), "erase.db")
		db, err := sqlite.Open(path, sqlite.WithCodec(m, u))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return erasable{sessions: db, runs: db, backend: db, search: func(t *testing.T, needles [][]byte) []string {
			return searchFiles(t, needles, path, path+"-wal", path+"-shm")
		}}
	case "postgres":
		pool, err := pgxpool.New(context.Background(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		schema := "turnkit_erase_" + newID()
		t.Cleanup(func() {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			pool.Close()
		})
		db, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema), postgres.WithCodec(m, u))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return erasable{sessions: db, runs: db, backend: db, search: func(t *testing.T, needles [][]byte) []string {
			return searchTables(t, pool, schema, needles)
		}}
	case "redis":
		client, prefix := redisClient(t)
		db := redis.New(client, redis.WithPrefix(prefix), redis.WithCodec(m, u))
		return erasable{sessions: db, runs: db, backend: db, search: func(t *testing.T, needles [][]byte) []string {
			var found []string
			iter := client.Scan(t.Context(), 0, prefix+"*", 1000).Iterator()
			for iter.Next(t.Context()) {
				// DUMP compresses: read each value by its type, and search
				// the dump too.
				key := iter.Val()
				dump, err := client.Dump(t.Context(), key).Bytes()
				if err != nil {
					t.Fatalf("DUMP %s: %v", key, err)
				}
				data := append([]byte(key+" "), dump...)
				switch typ := client.Type(t.Context(), key).Val(); typ {
				case "string":
					data = append(data, client.Get(t.Context(), key).Val()...)
				case "hash":
					for k, v := range client.HGetAll(t.Context(), key).Val() {
						data = append(append(data, k...), v...)
					}
				case "zset":
					for _, m := range client.ZRange(t.Context(), key, 0, -1).Val() {
						data = append(data, m...)
					}
				case "list":
					for _, m := range client.LRange(t.Context(), key, 0, -1).Val() {
						data = append(data, m...)
					}
				case "set":
					for _, m := range client.SMembers(t.Context(), key).Val() {
						data = append(data, m...)
					}
				default:
					t.Fatalf("key %s of type %s", key, typ)
				}
				found = append(found, contains(key, data, needles)...)
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			return found
		}}
	}
	t.Fatalf("unknown backend %s", name)
	return erasable{}
}

func contains(where string, data []byte, needles [][]byte) []string {
	var found []string
	for _, n := range needles {
		if bytes.Contains(data, n) {
			found = append(found, where+": "+string(n[:min(len(n), 24)]))
		}
	}
	return found
}

func searchFiles(t *testing.T, needles [][]byte, names ...string) []string {
	var found []string
	for _, name := range names {
		data, err := readIfExists(name)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, contains(filepath.Base(name), data, needles)...)
	}
	return found
}

// searchTables reads every row of every table of schema as text (bytea
// as hex) and searches it for the needles, and their hex.
func searchTables(t *testing.T, pool *pgxpool.Pool, schema string, needles [][]byte) []string {
	rows, err := pool.Query(t.Context(), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	all := append([][]byte(nil), needles...)
	for _, n := range needles {
		all = append(all, []byte(hex.EncodeToString(n)))
	}
	var found []string
	for _, table := range tables {
		rows, err := pool.Query(t.Context(), "SELECT t::text FROM "+pgx.Identifier{schema, table}.Sanitize()+" t")
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, contains(table, []byte(strings.Join(texts, "\n")), all)...)
	}
	return found
}

// fillErasable stores two sessions, each with items, a checkpoint and a
// mark, and returns the secrets of the first.
func fillErasable(t *testing.T, sessions session.Store, runs state.Store) [][]byte {
	ctx := t.Context()
	for _, sid := range []string{"session-1", "session-2"} {
		items := []state.Item{
			state.UserMessage("my card is 4111 of " + sid).WithSeq(1),
			state.ToolCall("fc_1", "call_1", "lookup", `{"q":"address of `+sid+`"}`).WithSeq(2),
			state.ToolOutput("call_1", "lookup", "12 Quiet Street of "+sid).WithSeq(3),
			state.AssistantMessage("msg_1", "Your address is 12 Quiet Street of "+sid).WithSeq(4),
		}
		if err := sessions.Append(ctx, sid, "r0-"+sid, items); err != nil {
			t.Fatalf("Append = %v", err)
		}
		mark, err := state.Opaque([]byte(`{"type":"turnkit.mark","note":"mark of ` + sid + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.Append(ctx, sid+"#turnkit.tip", "m", []state.Item{mark.WithSeq(1)}); err != nil {
			t.Fatalf("Append mark = %v", err)
		}
		run := statetest.SampleRun(t, "r1-"+sid)
		runcore.SetSessionID(run, sid)
		if err := runs.Save(ctx, run); err != nil {
			t.Fatalf("Save = %v", err)
		}
	}
	return [][]byte{[]byte("4111 of session-1"), []byte("address of session-1"), []byte("Street of session-1"),
		[]byte("mark of session-1"), []byte("r1-session-1"), []byte("r0-session-1")}
}

// TestErase erases one session of two on every backend, plain and
// sealed, and searches what each keeps at rest for the session's content:
// the plaintext, and, sealed, the ciphertexts it stored.
func TestErase(t *testing.T) {
	for _, name := range []string{"memory", "sqlite", "postgres", "redis"} {
		for _, sealed := range []bool{false, true} {
			if sealed && name == "memory" {
				continue // the memory stores are two: no Backend to Wrap
			}
			t.Run(name+map[bool]string{false: "/plain", true: "/sealed"}[sealed], func(t *testing.T) {
				ctx := t.Context()
				var kr *encrypt.Keyring
				if sealed {
					kr = encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1"))
				}
				e := openErasable(t, name, kr)
				sessions, runs := e.sessions, e.runs
				var store *encrypt.Store
				if sealed {
					store = encrypt.Wrap(e.backend, kr)
					sessions, runs = store, store
				}
				needles := fillErasable(t, sessions, runs)
				held, err := runs.Load(ctx, "r1-session-1") // a paused run a worker holds
				if err != nil {
					t.Fatal(err)
				}
				if sealed {
					// The session's ciphertexts as stored: after erasure,
					// not one of them may be left.
					raw, err := e.sessions.List(ctx, "session-1", 0)
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range raw {
						needles = append(needles, it.Raw()[it.RawLen()-40:it.RawLen()-2])
					}
				}
				if e.search != nil && len(e.search(t, needles[:1])) == 0 && !sealed {
					t.Fatal("the search does not find the session's content before the erasure")
				}
				var rep encrypt.EraseReport
				if sealed {
					rep, err = store.Erase(ctx, "session-1", encrypt.Shred())
				} else {
					rep, err = encrypt.Erase(ctx, sessions, runs, "session-1")
				}
				if err != nil {
					t.Fatalf("Erase = %v", err)
				}
				if rep.Items != 5 || rep.Runs != 1 || rep.Scrubbed != (name == "sqlite") || rep.Shredded != sealed {
					t.Errorf("Erase report = %+v, want 5 items, 1 run", rep)
				}
				if e.search != nil {
					if found := e.search(t, needles); len(found) > 0 {
						t.Errorf("after erasure, the session's content is still at rest: %v", found)
					}
				}
				if got, err := sessions.List(ctx, "session-2", 0); err != nil || len(got) != 4 {
					t.Errorf("the other session: List = %d items, %v", len(got), err)
				}
				if _, err := runs.Load(ctx, "r1-session-2"); err != nil {
					t.Errorf("the other session's run: Load = %v", err)
				}
				if _, err := runs.Load(ctx, "r1-session-1"); !errors.Is(err, state.ErrNotFound) {
					t.Errorf("an erased run: Load = %v, want ErrNotFound", err)
				}
				if !sealed {
					return
				}
				if err := runs.Save(ctx, held); !errors.Is(err, encrypt.ErrErased) {
					t.Errorf("resuming a held run of the erased session: Save = %v, want ErrErased", err)
				}
				again := encrypt.Wrap(e.backend, encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1")))
				if err := again.Append(ctx, "session-1", "r5", []state.Item{state.UserMessage("again").WithSeq(1)}); !errors.Is(err, encrypt.ErrErased) {
					t.Errorf("another process appends to the erased session: %v, want ErrErased", err)
				}
				if rec, ok, err := encrypt.KeysIn(again).Get(ctx, "session-1"); err != nil || !ok || !rec.Erased || rec.Wrapped != nil {
					t.Errorf("key record after a shredding erasure = %+v, %v, %v", rec, ok, err)
				}
			})
		}
	}
}
