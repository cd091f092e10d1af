package sqlite

import (
	"time"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

// An Option configures a [Store] in [Open].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	busyTimeout time.Duration
	maxConns    int
	codec       rowcodec.Codec
	items       ItemCodec
	noMigrate   bool
}

func newConfig(opts []Option) config {
	c := config{busyTimeout: 5 * time.Second, maxConns: 4}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithBusyTimeout sets how long a statement waits for another process's
// write lock on the file before it fails with "database is locked". The
// default is 5s; d <= 0 is ignored. Repeated calls replace the value.
func WithBusyTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.busyTimeout = d
		}
	})
}

// WithMaxConns sets the number of connections the store keeps open to the
// file for reading, which bounds concurrent readers (WAL lets readers run
// beside the one writer); the store holds one more for its writes. The
// default is 4; n < 1 is ignored. Repeated calls replace the value.
func WithMaxConns(n int) Option {
	return optionFunc(func(c *config) {
		if n >= 1 {
			c.maxConns = n
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

// WithoutMigrations makes [Open] check the database's schema instead of
// migrating it: Open fails at once with a [*SchemaError] wrapping
// [ErrNotMigrated] when the file lacks a migration this package embeds (a
// new, empty file lacks them all), or [ErrSchemaVersion] when it is newer,
// and writes nothing to the file. Use it where migration is an explicit
// step ([Migrate]) run apart from the workers. By default Open migrates.
func WithoutMigrations() Option {
	return optionFunc(func(c *config) { c.noMigrate = true })
}

// ItemCodec is [session.ItemCodec]: how the store keeps items, given
// with [WithItemCodec].
type ItemCodec = session.ItemCodec

// WithItemCodec sets the codec the store keeps session items with (see
// [ItemCodec]); by default an item is kept as its canonical JSON. With
// session/encrypt, pass the keyring given to WithCodec: encrypt.Wrap then
// leaves the sealing of items to the store, which saves a sealed copy of
// each item. A nil c is ignored.
func WithItemCodec(c ItemCodec) Option {
	return optionFunc(func(cfg *config) {
		if c != nil {
			cfg.items = c
		}
	})
}
