package riverrun_test

import (
	"context"
	"errors"
)

// workerConfig configures a worker child of the kill test.
type workerConfig struct{}

func workerChild[TTx any](ctx context.Context, cfg childConfig, open opener[TTx]) error {
	return errors.New("not yet")
}
