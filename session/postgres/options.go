package postgres

import (
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

// An Option configures a [Store] in [Open] or [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	schema    string
	codec     rowcodec.Codec
	items     ItemCodec
	noMigrate bool
}

func newConfig(opts []Option) config {
	c := config{schema: "turnkit"}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithSchema sets the PostgreSQL schema that holds the store's tables; it
// is created if missing. The default is "turnkit"; an empty name is
// ignored. Repeated calls replace the value. Stores with different schemas
// share nothing, which is how tests isolate themselves.
func WithSchema(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.schema = name
		}
	})
}

// WithCodec sets the options the store encodes and decodes run checkpoints
// with, as the WithCodec of every checkpoint store does (state/memstore,
// state/filestore, the other session backends): with
// [state.WithSigningKey] among marshal, every checkpoint is saved signed;
// with [state.WithVerifyKeys] among unmarshal, Load refuses a checkpoint
// that is unsigned, names an unknown key or was edited in the database,
// with a [*state.StoreError] wrapping a [*state.SignatureError] (errors.Is
// [state.ErrTampered]). During a key rotation sign with the new key and
// verify with both. Repeated calls accumulate.
// Sessions (items) are not signed.
func WithCodec(marshal []state.MarshalOption, unmarshal []state.UnmarshalOption) Option {
	return optionFunc(func(c *config) { c.codec = c.codec.With(marshal, unmarshal) })
}

// WithoutMigrations makes [Open] and [New] check the schema instead of
// migrating it: they fail at once with a [*SchemaError] wrapping
// [ErrNotMigrated] when the schema lacks a migration this package embeds
// (or does not exist), or [ErrSchemaVersion] when it is newer, and change
// nothing in the database. Use it where migration is an explicit step
// ([Migrate]) run apart from the workers. By default the store migrates
// the schema when it is made.
func WithoutMigrations() Option {
	return optionFunc(func(c *config) { c.noMigrate = true })
}

// ItemCodec is [session.ItemCodec]: how the store keeps items, given
// with [WithItemCodec].
type ItemCodec = session.ItemCodec

// WithItemCodec sets the codec the store keeps session items with (see
// [ItemCodec]); by default an item is kept as its canonical JSON. With
// session/encrypt, pass the keyring given to WithCodec: encrypt.Wrap then
// leaves the sealing of items to the store, which saves a sealed copy and
// a parse of each item. A nil c is ignored.
func WithItemCodec(c ItemCodec) Option {
	return optionFunc(func(cfg *config) {
		if c != nil {
			cfg.items = c
		}
	})
}
