package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"
)

// A script is a Lua script of the store's hot paths (a save, a commit, an
// append), called with an argument list the store builds whole: go-redis's
// Script.Run copies the keys and arguments into a list of its own, boxing
// each key string (one allocation a key: thirteen a crash-safe tool turn)
// and the command's name and digest.
type script struct {
	sha, src any // the digest (go-redis's, the source's SHA-1) and the source, boxed once
}

func newScript(src string) *script {
	return &script{sha: goredis.NewScript(src).Hash(), src: src}
}

// head returns the start of a call of the script on keys, with room for n
// arguments more: EVALSHA, the digest, the number of keys, then each key
// as a pointer into keys, which boxes with no allocation (go-redis writes
// a *string as the string, and a cluster client routes the command by it).
// keys must not change until the call is made.
func (sc *script) head(keys []string, n int) []any {
	args := make([]any, 3+len(keys), 3+len(keys)+n)
	args[0], args[1], args[2] = "evalsha", sc.sha, len(keys)
	for i := range keys {
		args[3+i] = &keys[i]
	}
	return args
}

// run sends args (head's, then the script's own) as Script.Run does:
// EVALSHA, then, if the server does not hold the script (restarted,
// flushed, or a new node), EVAL with its source. args is left as it was.
func (sc *script) run(ctx context.Context, c goredis.UniversalClient, args []any) *goredis.Cmd {
	cmd := sc.call(ctx, c, args)
	if err := cmd.Err(); err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT")) {
		args[0], args[1] = "eval", sc.src
		cmd = sc.call(ctx, c, args)
		args[0], args[1] = "evalsha", sc.sha
	}
	return cmd
}

func (sc *script) call(ctx context.Context, c goredis.UniversalClient, args []any) *goredis.Cmd {
	cmd := goredis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = c.Process(ctx, cmd)
	return cmd
}
