package logging

import (
	"go.uber.org/zap/zapcore"

	"github.com/turnkit/turnkit/state"
)

var (
	_ zapcore.ArrayMarshaler  = hostedArray(nil)
	_ zapcore.ObjectMarshaler = hostedObject{}
)

// hostedArray logs the hosted calls and opaque items of a response as
// {type, id, status} objects: which hosted tools the API ran within the
// model call, and how each ended. Their arguments and results are
// payloads, logged only in the output field with WithPayloads.
type hostedArray []state.Item

// hostedOf returns the response's hosted calls and opaque items, or nil.
func hostedOf(items []state.Item) hostedArray {
	var out hostedArray
	for _, it := range items {
		if it.Kind() == state.KindHostedCall || it.Kind() == state.KindOpaque {
			out = append(out, it)
		}
	}
	return out
}

func (a hostedArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, it := range a {
		if err := enc.AppendObject(hostedObject{it}); err != nil {
			return err
		}
	}
	return nil
}

type hostedObject struct{ it state.Item }

func (o hostedObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("type", o.it.Name())
	if id := o.it.CallID(); id != "" {
		enc.AddString("id", id)
	}
	if status := o.it.Text(); status != "" {
		enc.AddString("status", status)
	}
	return nil
}
