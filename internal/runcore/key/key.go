// Package key makes the key that opens package state's guarded operations
// ([state.Core]) for package runcore. It sits below state, so that state
// can name the key's type in Core's signature without importing runcore.
//
// A key is checked at run time as well as at compile time: a package
// outside this module cannot import this one to make a key, and the zero
// Key that generic code could conjure without naming the type opens
// nothing. The root deps_test.go lets only state and runcore import it.
package key

// A Key opens package state's guarded operations. The zero Key is not
// valid; only [Make] returns a valid one.
type Key struct{ valid bool }

// Make returns a valid key.
func Make() Key { return Key{valid: true} }

// Valid reports whether k came from [Make].
func (k Key) Valid() bool { return k.valid }
