// Package sessiontest is the conformance suite every [session.Store]
// passes, the way testing/fstest checks an fs.FS.
//
// A backend's test calls [TestStore] with a constructor that returns a new,
// empty store for each subtest:
//
//	func TestStore(t *testing.T) {
//		sessiontest.TestStore(t, func(t *testing.T) session.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// # What it checks
//
// Order by (the run's place in the session, Seq) with late commits across
// interleaved runs; idempotent retries and overlapping batches; ErrConflict
// with no partial write; ErrInvalid arguments; limit; pop; clear; isolation
// between sessions; concurrent appends from many goroutines to different
// runs and to the same run; 1 MiB and unicode items that round-trip byte for
// byte; cancelled contexts that write nothing; Lookup; ErrClosed after
// Close.
//
// The suite uses session IDs that are unique per call, so stores shared
// between subtests (a server-backed store, say) do not see each other's
// data; the constructor may still return the same backing database.
package sessiontest
