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
// Like the SQL and Redis checkpoint stores beside the session stores, it
// uses [state.Run.Delta] to save what changed (and records the save with
// runcore.Saved, which only turnkit's stores reach), [state.Assemble] to load, and [state.HeadVersions] to
// tell which of a run's save files a load reads.
package filestore
