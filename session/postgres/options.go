package postgres

// An Option configures a [Store] in [Open] or [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	schema string
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
