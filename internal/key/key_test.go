package key_test

import (
	"testing"

	"github.com/turnkit/turnkit/internal/key"
)

func TestOnlyMadeKeysAreValid(t *testing.T) {
	if (key.Key{}).Valid() {
		t.Error("the zero Key is valid: code outside the module could open state's guarded operations")
	}
	if !key.Make().Valid() {
		t.Error("Make returned a key that is not valid")
	}
}
