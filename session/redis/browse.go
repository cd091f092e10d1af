package redis

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/session"
)

var (
	_ session.Lister = (*Store)(nil)
	_ session.Pager  = (*Store)(nil)
)

// sessionIndex returns the keys of the listing of sessions, which share
// one hash tag: the sorted set of session IDs by serial (newest), the
// sorted set of session IDs at score 0 (ids, by ID), and the last serial
// given.
func (s *Store) sessionIndex() []string {
	base := s.prefix + "sessions:{index}:"
	return []string{base + "newest", base + "ids", base + "serial"}
}

// fileScript lists a session if it is not listed. KEYS: sessionIndex.
// ARGV: the session ID.
var fileScript = goredis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local n = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], n, ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`)

// fileSession lists a session its append has just created. It is a step
// of its own, after the append: the listing's keys are in a hash slot of
// their own. A crash between the two leaves the session unlisted until
// it is cleared and created again; the session itself is whole.
func (s *Store) fileSession(ctx context.Context, sessionID string) error {
	if err := fileScript.Run(ctx, s.client, s.sessionIndex(), sessionID).Err(); err != nil {
		return s.wrap(ctx, "append to", sessionID, fmt.Errorf("the items are stored, the session is not listed: %w", err))
	}
	return nil
}

// unfileSession removes a cleared session from the listing.
func (s *Store) unfileSession(ctx context.Context, sessionID string) error {
	keys := s.sessionIndex()
	_, err := s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.ZRem(ctx, keys[0], sessionID)
		p.ZRem(ctx, keys[1], sessionID)
		return nil
	})
	return s.wrap(ctx, "clear", sessionID, err)
}

// ListSessions returns a page of the sessions, newest first by their
// first append, or those whose ID starts with q.Prefix in byte order (see
// [session.Lister]): one range read of a sorted set the appends and
// clears keep, O(log n + the page). A session is listed by a step after
// the append that creates it (see [Store.Append]).
func (s *Store) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	if err := s.gate.Begin(ctx, "list sessions", q.Prefix); err != nil {
		return session.SessionPage{}, err
	}
	n := q.PageSize()
	keys := s.sessionIndex()
	var page session.SessionPage
	if q.Prefix == "" {
		before, err := q.NewestBefore()
		if err != nil {
			return page, err
		}
		max := "+inf"
		if before != math.MaxInt64 {
			max = "(" + strconv.FormatInt(before, 10)
		}
		zs, err := s.client.ZRevRangeByScoreWithScores(ctx, keys[0], &goredis.ZRangeBy{Max: max, Min: "-inf", Count: int64(n + 1)}).Result()
		if err != nil {
			return page, s.wrap(ctx, "list sessions", q.Prefix, err)
		}
		for _, z := range zs[:min(n, len(zs))] {
			page.IDs = append(page.IDs, z.Member.(string))
		}
		if len(zs) > n {
			page.Next = session.NewestCursor(int64(zs[n-1].Score))
		}
		return page, nil
	}
	after, err := q.After()
	if err != nil {
		return page, err
	}
	lo := "[" + q.Prefix
	if after != "" {
		lo = "(" + after
	}
	ids, err := s.client.ZRangeByLex(ctx, keys[1], &goredis.ZRangeBy{Min: lo, Max: "[" + q.Prefix + "\xff", Count: int64(n + 1)}).Result()
	if err != nil {
		return page, s.wrap(ctx, "list sessions", q.Prefix, err)
	}
	page.IDs = ids[:min(n, len(ids))]
	if len(ids) > n {
		page.Next = session.AfterCursor(page.IDs[n-1])
	}
	return page, nil
}

// pageScript reads a page of a session's items backwards from a position.
// KEYS: the session's items and outputs (see [Store.keys]). ARGV: the
// position (place and Seq in hex) the page ends before ("": the end), the
// number of items. It returns the run ID (from the outputs hash's
// "p<place>", "" for a run stored before it was kept) and the member of
// each item, alternately, newest first.
var pageScript = goredis.NewScript(`
local max = '+'
if ARGV[1] ~= '' then max = '(' .. ARGV[1] end
local ms = redis.call('ZREVRANGEBYLEX', KEYS[1], max, '-', 'LIMIT', 0, tonumber(ARGV[2]))
local out, runs = {}, {}
for _, m in ipairs(ms) do
	local place = string.sub(m, 1, 16)
	if runs[place] == nil then runs[place] = redis.call('HGET', KEYS[2], 'p' .. place) or '' end
	out[#out + 1] = runs[place]
	out[#out + 1] = m
end
return out
`)

// ListPage returns a page of the session's items before the cursor, with
// their runs (see [session.Pager]): one script reading the items' sorted
// set backwards from the cursor, O(log n + the page) whatever the
// session's length.
func (s *Store) ListPage(ctx context.Context, sessionID string, q session.PageQuery) (session.ItemPage, error) {
	if err := s.gate.Begin(ctx, "page", sessionID); err != nil {
		return session.ItemPage{}, err
	}
	place, seq, err := q.Before()
	if err != nil {
		return session.ItemPage{}, err
	}
	pos := ""
	if q.Cursor != "" {
		pos = seqHex(place) + seqHex(seq)
	}
	n := q.PageSize()
	keys := s.keys(sessionID)
	res, err := pageScript.Run(ctx, s.client, []string{keys[0], keys[4]}, pos, n+1).StringSlice()
	if err != nil {
		return session.ItemPage{}, s.wrap(ctx, "page", sessionID, err)
	}
	var page session.ItemPage
	for i := 0; i+1 < len(res); i += 2 {
		m := res[i+1]
		it, err := s.decodeMember(ctx, sessionID, "", m)
		if err != nil {
			return session.ItemPage{}, s.wrap(ctx, "page", sessionID, err)
		}
		pl, err := strconv.ParseInt(m[:16], 16, 64)
		if err != nil {
			return session.ItemPage{}, s.wrap(ctx, "page", sessionID, err)
		}
		page.Entries = append(page.Entries, session.Entry{RunID: res[i], Place: pl, Item: it})
	}
	if len(page.Entries) > n {
		page.Entries = page.Entries[:n]
		last := page.Entries[n-1]
		page.Next = session.PageCursor(last.Place, last.Item.Seq())
	}
	slices.Reverse(page.Entries)
	return page, nil
}
