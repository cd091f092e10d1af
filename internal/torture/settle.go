package torture

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// A killed child's last writes can outlive it on a database server: a
// statement it sent in one round trip with its commit (an implicit
// transaction, as session/postgres sends a save with its append) goes on
// on the server after the process is gone, and commits. A check that ran
// at once could then read the run's checkpoint before that commit and its
// session after it, and report items without a checkpoint that were
// written together. So each child connects under a name of its own
// (tagged), and after a kill [Torture] waits until the server has no
// connection of that name left (settle): then every statement the child
// sent has ended, committed or rolled back. SQLite needs no wait: the
// kernel has completed a killed process's writes when it is reaped.

// tagged returns the backend with its server connections named tag
// (PostgreSQL's application_name, Redis's client name); "" leaves it.
func (b Backend) tagged(tag string) (Backend, error) {
	if tag == "" {
		return b, nil
	}
	var err error
	switch {
	case b.PostgresURL != "":
		b.PostgresURL, err = withQuery(b.PostgresURL, "application_name", tag)
	case b.RedisURL != "":
		b.RedisURL, err = withQuery(b.RedisURL, "client_name", tag)
	}
	return b, err
}

func withQuery(raw, key, value string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("torture: backend URL: %w", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// settleTimeout bounds the wait for a killed child's connections to end.
const settleTimeout = time.Minute

// settle waits until the server has no connection named tag left; on
// SQLite it returns at once.
func (b Backend) settle(ctx context.Context, tag string) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	var count func(context.Context) (int, error)
	switch {
	case b.PostgresURL != "":
		conn, err := pgx.Connect(ctx, b.PostgresURL)
		if err != nil {
			return fmt.Errorf("torture: settle: %w", err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		count = func(ctx context.Context) (n int, err error) {
			err = conn.QueryRow(ctx, "select count(*) from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()", tag).Scan(&n)
			return n, err
		}
	case b.RedisURL != "":
		o, err := goredis.ParseURL(b.RedisURL)
		if err != nil {
			return fmt.Errorf("torture: settle: %w", err)
		}
		client := goredis.NewClient(o)
		defer client.Close()
		count = func(ctx context.Context) (int, error) {
			list, err := client.ClientList(ctx).Result()
			return strings.Count(list, " name="+tag+" "), err
		}
	default:
		return nil
	}
	for {
		n, err := count(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("torture: settle the connections of %s: %w", tag, err)
		case n == 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("torture: settle: %d connections of %s still open: %w", n, tag, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
