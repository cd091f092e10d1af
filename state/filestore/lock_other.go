//go:build !unix

package filestore

// lockFile is a no-op where advisory file locks are not available: the
// Store's in-process lock still serializes its own saves.
func lockFile(string) (release func(), err error) { return func() {}, nil }
