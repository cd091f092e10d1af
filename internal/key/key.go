// Package key makes the keys that open turnkit's two guarded doors: the
// run's core operations ([state.Core]), for package internal/runcore, and
// the core's own turn building ([pipeline.Core]), for package
// pipelinetest. It sits below both, so that state and pipeline can name
// the key's type in their signatures without importing who holds it.
//
// A key is checked at run time as well as at compile time: a package
// outside this module cannot import this one to make a key, and the zero
// Key that generic code could conjure without naming the type opens
// nothing. The root deps_test.go lists who may import it.
package key

// A Key opens a guarded door. The zero Key is not valid; only [Make]
// returns a valid one.
type Key struct{ valid bool }

// Make returns a valid key.
func Make() Key { return Key{valid: true} }

// Valid reports whether k came from [Make].
func (k Key) Valid() bool { return k.valid }
