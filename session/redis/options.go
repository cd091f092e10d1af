package redis

// An Option configures a [Store] in [Open] or [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix string
}

func newConfig(opts []Option) config {
	c := config{prefix: "turnkit:"}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithPrefix sets the prefix of every key the store writes. The default is
// "turnkit:"; an empty prefix is ignored. Repeated calls replace the value.
// Stores with different prefixes share nothing, which is how tests isolate
// themselves.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) {
		if prefix != "" {
			c.prefix = prefix
		}
	})
}
