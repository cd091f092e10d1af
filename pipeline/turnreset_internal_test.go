package pipeline

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// turnScratch names the fields of Turn that reset leaves as they were:
// the core's room for the model call and the first tool call, which it
// overwrites whole before it uses them.
var turnScratch = []string{"model", "call0", "own0", "calls1", "result1"}

// TestTurnResetCoversEveryField: Turn.reset clears every field of a turn
// that served an earlier one, except turnScratch: a field added
// to Turn and not to reset fails here, instead of leaking one turn's
// value into the next.
func TestTurnResetCoversEveryField(t *testing.T) {
	var turn Turn
	v := reflect.ValueOf(&turn).Elem()
	for i := range v.NumField() {
		setNonZero(t, settable(v.Field(i)), v.Type().Field(i).Name)
	}
	turn.reset()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		scratch := slices.Contains(turnScratch, name)
		if zero := v.Field(i).IsZero(); zero == scratch {
			if scratch {
				t.Errorf("reset cleared %s, which the core overwrites before use: the clearing is the cost reset avoids", name)
			} else {
				t.Errorf("reset kept the earlier turn's %s: name it in Turn.reset", name)
			}
		}
	}
}

// settable returns f, an unexported field too, as a settable value.
func settable(f reflect.Value) reflect.Value {
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// setNonZero sets v to a value other than its zero value.
func setNonZero(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Struct, reflect.Array:
		if v.Kind() == reflect.Struct {
			setNonZero(t, settable(v.Field(0)), name)
		} else {
			setNonZero(t, v.Index(0), name)
		}
	default:
		t.Fatalf("field %s: no non-zero value for a %s", name, v.Kind())
	}
}
