// Package hook is where package state leaves its core operations for
// package runcore. It holds one variable, typed any because hook sits below
// state (state imports it to set it; runcore imports both), as in grpc-go's
// internal package. Nothing but state may set it and nothing but runcore
// may read it; the root deps_test.go holds both.
package hook

// Ops is set by package state's init to a value whose method set is
// runcore's ops interface.
var Ops any
