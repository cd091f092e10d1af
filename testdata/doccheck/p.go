// Package p holds one of each case TestUndocumentedFindsEachKind checks.
package p

func Bare() {}

// Documented is documented.
func Documented() {}

type T struct{}

// G is a generic type.
type G[K comparable] struct{}

func (T) M()          {}
func (*G[K]) N()      {}
func (t) Hidden()     {}
func (T) unexported() {}

type t struct{}

// Kinds are documented by their group's comment.
const (
	A = iota
	B
)

const (
	C = 1 // C is documented at the end of its line.
	D = 2
)

var E = 1

type (
	// F is documented.
	F int
	H int
)
