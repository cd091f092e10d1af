//go:build !unix

package state

// lockFile is a no-op where advisory file locks are not available: the
// FileStore's in-process lock still serializes its own saves.
func lockFile(string) (release func(), err error) { return func() {}, nil }
