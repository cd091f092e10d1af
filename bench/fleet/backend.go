package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
)

// The backends.
const (
	SQLite       = "sqlite"        // one file on this machine, WAL
	Postgres     = "postgres"      // one PostgreSQL server
	RedisCluster = "redis-cluster" // a Redis Cluster through goredis.NewClusterClient
	Redis        = "redis"         // one Redis server
)

// A Backend says where a simulation keeps its sessions and checkpoints.
type Backend struct {
	// Name is [SQLite], [Postgres], [RedisCluster] or [Redis].
	Name string `json:"name"`
	// Dir holds the SQLite file.
	Dir string `json:"dir,omitempty"`
	// PostgresURL and Schema: the PostgreSQL database and the schema the
	// simulation owns (dropped before and after).
	PostgresURL string `json:"postgres_url,omitempty"`
	// RedisURL is the Redis server; ClusterAddrs the Redis Cluster's nodes.
	RedisURL     string   `json:"redis_url,omitempty"`
	ClusterAddrs []string `json:"cluster_addrs,omitempty"`
	// Schema is the PostgreSQL schema or the Redis key prefix (with ":"
	// added) the simulation owns: it deletes everything in it before and
	// after a simulation.
	Schema string `json:"schema"`
}

// sqlitePath is the database file.
func (b Backend) sqlitePath() string { return filepath.Join(b.Dir, "fleet.db") }

// open opens the backend's store with its traffic counted in c.
func (b Backend) open(ctx context.Context, c *counters) (Store, error) {
	var st Store
	switch b.Name {
	case SQLite:
		// Several processes share the file: a writer may wait for the
		// others' transactions, so the busy timeout is generous.
		s, err := sqlite.Open(b.sqlitePath(), sqlite.WithBusyTimeout(time.Minute))
		if err != nil {
			return nil, err
		}
		st = s
	case Postgres:
		cfg, err := pgxpool.ParseConfig(b.PostgresURL)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		cfg.ConnConfig.Tracer = pgTracer{&c.roundTrips}
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		s, err := postgres.New(ctx, pool, postgres.WithSchema(b.Schema))
		if err != nil {
			pool.Close()
			return nil, err
		}
		st = &closePool{Store: s, pool: pool}
	case RedisCluster, Redis:
		client, err := b.redisClient()
		if err != nil {
			return nil, err
		}
		switch cl := client.(type) {
		case *goredis.ClusterClient:
			cl.OnNewNode(func(node *goredis.Client) { node.AddHook(redisHook{c}) })
		case *goredis.Client:
			cl.AddHook(redisHook{c})
		}
		if err := client.Ping(ctx).Err(); err != nil {
			client.Close()
			return nil, fmt.Errorf("fleet: ping %s: %w", b.Name, err)
		}
		st = redis.New(client, redis.WithPrefix(b.Schema+":"))
	default:
		return nil, fmt.Errorf("fleet: unknown backend %q", b.Name)
	}
	return &countingStore{Store: st, c: c}, nil
}

// closePool closes the pool the store was given after the store.
type closePool struct {
	*postgres.Store
	pool *pgxpool.Pool
}

func (s *closePool) Close() error {
	err := s.Store.Close()
	s.pool.Close()
	return err
}

func (b Backend) redisClient() (goredis.UniversalClient, error) {
	if b.Name == RedisCluster {
		if len(b.ClusterAddrs) == 0 {
			return nil, errors.New("fleet: no Redis Cluster addresses")
		}
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: b.ClusterAddrs}), nil
	}
	opt, err := goredis.ParseURL(b.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return goredis.NewClient(opt), nil
}

// reset deletes everything the backend's schema, key prefix or folder
// holds.
func (b Backend) reset(ctx context.Context) error {
	switch b.Name {
	case SQLite:
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(b.sqlitePath() + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return os.MkdirAll(b.Dir, 0o750)
	case Postgres:
		conn, err := pgx.Connect(ctx, b.PostgresURL)
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.Schema}.Sanitize()+" CASCADE")
		return err
	case RedisCluster, Redis:
		client, err := b.redisClient()
		if err != nil {
			return err
		}
		defer client.Close()
		del := func(ctx context.Context, node *goredis.Client) error {
			iter := node.Scan(ctx, 0, b.Schema+":*", 1000).Iterator()
			var keys []string
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			if err := iter.Err(); err != nil {
				return err
			}
			for _, k := range keys { // one by one: keys of many slots
				if err := node.Unlink(ctx, k).Err(); err != nil {
					return err
				}
			}
			return nil
		}
		if cl, ok := client.(*goredis.ClusterClient); ok {
			return cl.ForEachMaster(ctx, del)
		}
		return del(ctx, client.(*goredis.Client))
	}
	return fmt.Errorf("fleet: unknown backend %q", b.Name)
}

// stored returns the bytes the backend holds: the SQLite file's pages in
// use, the PostgreSQL schema's tables with their indexes and TOAST, or
// the memory the Redis servers use (used_memory, summed over the nodes;
// other clients' keys on a shared server count too).
func (b Backend) stored(ctx context.Context) (int64, error) {
	switch b.Name {
	case SQLite:
		// The pages in use once the WAL is folded into the file: the file's
		// size moves with checkpoints and free pages, this does not.
		db, err := sql.Open("sqlite", b.sqlitePath()+"?_busy_timeout=60000")
		if err != nil {
			return 0, fmt.Errorf("fleet: %w", err)
		}
		defer db.Close()
		var pages, free, size int64
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return 0, fmt.Errorf("fleet: %w", err)
		}
		for q, v := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
			if err := db.QueryRowContext(ctx, q).Scan(v); err != nil {
				return 0, fmt.Errorf("fleet: %s: %w", q, err)
			}
		}
		return (pages - free) * size, nil
	case Postgres:
		conn, err := pgx.Connect(ctx, b.PostgresURL)
		if err != nil {
			return 0, fmt.Errorf("fleet: %w", err)
		}
		defer conn.Close(ctx)
		var n int64
		err = conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
			WHERE s.nspname = $1 AND c.relkind = 'r'`, b.Schema).Scan(&n)
		return n, err
	case RedisCluster, Redis:
		var total int64
		mem := func(ctx context.Context, node *goredis.Client) error {
			info, err := node.Info(ctx, "memory").Result()
			if err != nil {
				return err
			}
			for line := range strings.SplitSeq(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
					var n int64
					fmt.Sscan(v, &n)
					total += n
				}
			}
			return nil
		}
		if b.Name == RedisCluster {
			// Node by node, each address given (the masters: the
			// cluster has no replicas).
			for _, addr := range b.ClusterAddrs {
				node := goredis.NewClient(&goredis.Options{Addr: addr})
				err := mem(ctx, node)
				node.Close()
				if err != nil {
					return 0, err
				}
			}
			return total, nil
		}
		client, err := b.redisClient()
		if err != nil {
			return 0, err
		}
		defer client.Close()
		return total, mem(ctx, client.(*goredis.Client))
	}
	return 0, fmt.Errorf("fleet: unknown backend %q", b.Name)
}
