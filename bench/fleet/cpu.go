package fleet

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// appName is the application_name of the worker processes' PostgreSQL
// connections, by which the parent finds their server processes.
const appName = "turnkit-fleet"

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// selfCPU returns the CPU time (user and system) this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU returns the CPU time (user and system) process pid used so far,
// from /proc; 0 if it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// serverPIDs returns the server processes that serve the simulation, on
// this machine: the PostgreSQL backends of the worker processes'
// connections, or the Redis servers listening on the backend's addresses
// (which serve other clients too, if any). None for SQLite, which runs in
// the worker processes.
func (b Backend) serverPIDs(ctx context.Context) ([]int, error) {
	switch b.Name {
	case Postgres:
		conn, err := pgx.Connect(ctx, b.PostgresURL)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, appName)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int])
	case RedisCluster, Redis:
		addrs := b.ClusterAddrs
		if b.Name == Redis {
			u, err := url.Parse(b.RedisURL)
			if err != nil {
				return nil, err
			}
			addrs = []string{u.Host}
		}
		dirs, err := filepath.Glob("/proc/[0-9]*")
		if err != nil {
			return nil, err
		}
		var pids []int
		for _, dir := range dirs {
			cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
			if err != nil || !strings.HasPrefix(string(cmd), "redis-server") {
				continue
			}
			for _, a := range addrs {
				if strings.Contains(string(cmd), a) {
					pid, _ := strconv.Atoi(filepath.Base(dir))
					pids = append(pids, pid)
					break
				}
			}
		}
		return pids, nil
	}
	return nil, nil
}

// serverCPU returns the CPU time the processes used so far.
func serverCPU(pids []int) time.Duration {
	var t time.Duration
	for _, pid := range pids {
		t += procCPU(pid)
	}
	return t
}
