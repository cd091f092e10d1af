package filestore

import (
	"slices"

	"github.com/turnkit/turnkit/state"
)

// An Option configures a [Store] in [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	marshal   []state.MarshalOption
	unmarshal []state.UnmarshalOption
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithCodec sets the options the store encodes and decodes checkpoints
// with: with [state.WithSigningKey] among marshal every checkpoint is saved
// signed, and with [state.WithVerifyKeys] among unmarshal Load refuses one
// that was edited with a [*state.StoreError] wrapping [state.ErrTampered].
// The default is none: unsigned checkpoints. Repeated calls accumulate.
func WithCodec(marshal []state.MarshalOption, unmarshal []state.UnmarshalOption) Option {
	return optionFunc(func(c *config) {
		c.marshal = append(slices.Clip(c.marshal), marshal...)
		c.unmarshal = append(slices.Clip(c.unmarshal), unmarshal...)
	})
}
