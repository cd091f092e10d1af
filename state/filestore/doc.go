// Package filestore is a [state.Store] in a directory: run checkpoints
// with compare-and-swap on the version, one head file per run and one file
// per save beside it, for one machine (processes on it may share the
// directory) and for programs that pause for a human and resume later.
//
// It is named filestore, not file, so that the package name says what it
// is at a call site and does not take a name a caller gives its own
// variables:
//
//	store, err := filestore.New(dir)
//
// It is a backend of package state/storage, as a store written outside
// turnkit is: it writes the delta [storage.Save] hands it (what changed
// since the last save) and returns what it keeps for [storage.Load] to
// reassemble, reading [state.HeadVersions] to tell which of a run's save
// files that is; it never changes a run.
package filestore
