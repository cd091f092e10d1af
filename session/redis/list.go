package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/state"
)

// indexBase is the start of the names of the listing's keys (see
// indexLua), prefix+"runs:{index}:": one hash tag for all of them, so that
// a script can reach every set a run moves between. New makes it, rather
// than every save.
func (s *Store) indexBase() string { return s.listing }

// summaryDoc is the part of a run's summary the index keeps as JSON.
type summaryDoc struct {
	Agent   string `json:"a"`
	Turn    int    `json:"u"`
	Pending int    `json:"p"`
	Version int64  `json:"v"`
}

// summaryArgs appends the run ID and the summary after its serial of
// sum, as indexLua's index takes them, to args.
func summaryArgs(args []any, sum state.RunSummary) []any {
	rest := appendSummaryRest(make([]byte, 0, summaryRestLen(sum)), sum)
	return append(args, sum.RunID, rest)
}

// appendSummaryRest appends what follows the serial in the listing's
// summary of sum (see indexLua) to b: ":<status>:<length of the session
// ID>:<session ID>", then the summaryDoc's JSON.
func appendSummaryRest(b []byte, sum state.RunSummary) []byte {
	b = strconv.AppendInt(append(b, ':'), int64(sum.Status), 10)
	b = strconv.AppendInt(append(b, ':'), int64(len(sum.SessionID)), 10)
	b = append(append(b, ':'), sum.SessionID...)
	return appendSummaryDoc(b, sum)
}

// summaryRestLen returns room enough for appendSummaryRest's bytes.
func summaryRestLen(sum state.RunSummary) int {
	return 2*20 + 3 + len(sum.SessionID) + summaryDocLen(sum)
}

// appendSummaryDoc appends the summaryDoc of sum to b, as encoding/json
// writes it (TestSummaryDocAsJSON), without its reflection: an agent name
// of printable ASCII that JSON does not escape (the common one) is copied
// between quotes, any other goes through encoding/json.
func appendSummaryDoc(b []byte, sum state.RunSummary) []byte {
	b = append(b, `{"a":`...)
	if plainJSON(sum.Agent) {
		b = append(append(append(b, '"'), sum.Agent...), '"')
	} else {
		name, _ := json.Marshal(sum.Agent) // a string: cannot fail
		b = append(b, name...)
	}
	b = strconv.AppendInt(append(b, `,"u":`...), int64(sum.Turn), 10)
	b = strconv.AppendInt(append(b, `,"p":`...), int64(sum.Pending), 10)
	b = strconv.AppendInt(append(b, `,"v":`...), sum.Version, 10)
	return append(b, '}')
}

// plainJSON reports whether s is printable ASCII that encoding/json
// writes as it is between quotes (it escapes '"', '\\', '<', '>' and '&').
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// summaryDocLen returns room enough for appendSummaryDoc's JSON of sum
// (an escaped character takes at most six bytes).
func summaryDocLen(sum state.RunSummary) int { return 24 + 6*len(sum.Agent) + 3*20 }

// index files the run d saved in the listing's index, apart from the save
// (in a Redis Cluster, where the two are in different hash slots).
func (s *Store) index(ctx context.Context, d *state.Delta) error {
	base := s.indexBase()
	args := summaryArgs([]any{base}, d.Summary)
	if err := indexScript.Run(ctx, s.client, []string{base + "sum"}, args...).Err(); err != nil {
		return s.storeErr(ctx, "save", d.RunID, fmt.Errorf("the checkpoint is saved, its listing is not: %w", err))
	}
	return nil
}

// listScript reads a page of the listing. KEYS: the sorted set of the
// listing, then the summaries' hash. ARGV: the serial the page starts
// below, and the number of runs to read. It returns the run IDs and their
// summaries, alternately.
var listScript = goredis.NewScript(`
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '-inf', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
if #ids == 0 then return out end
local sums = redis.call('HMGET', KEYS[2], unpack(ids))
for i = 1, #ids do
	out[#out + 1] = ids[i]
	out[#out + 1] = sums[i] or ''
end
return out
`)

// ListRuns returns a page of the stored runs, newest first by their first
// save, filtered by q's status and session (see [state.Lister]): one
// script reads the sorted set of the runs of that status and session
// from the cursor, and their summaries, in O(log n + the page). Each set
// is kept by the script that saves (or deletes) a run on a standalone
// server, in the same step.
//
// In a Redis Cluster the index's keys share one hash slot, apart from the
// runs' keys, so a save writes the checkpoint and then the index, as two
// steps: a crash between them leaves the run listed as of its save
// before (or, for its first save, not listed) until its next save, and a
// deletion likewise.
func (s *Store) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	if err := s.gate.BeginRun(ctx, "list", ""); err != nil {
		return state.RunPage{}, err
	}
	before, err := q.Before()
	if err != nil {
		return state.RunPage{}, err
	}
	base := s.indexBase()
	set := base + "g:" + strconv.Itoa(int(q.Status))
	if q.SessionID != "" {
		set = base + "s:" + strconv.Itoa(int(q.Status)) + ":" + q.SessionID
	}
	n := q.PageSize()
	res, err := listScript.Run(ctx, s.client, []string{set, base + "sum"}, strconv.FormatInt(before, 10), n+1).StringSlice()
	if err != nil {
		return state.RunPage{}, s.storeErr(ctx, "list", "", err)
	}
	sums := make([]state.RunSummary, 0, len(res)/2)
	serials := make([]int64, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		sum, serial, err := parseSummary(res[i], res[i+1])
		if err != nil {
			return state.RunPage{}, &state.StoreError{Op: "list", Err: fmt.Errorf("redis: %w", err)}
		}
		sums, serials = append(sums, sum), append(serials, serial)
	}
	if len(sums) <= n {
		return state.RunPage{Runs: sums}, nil
	}
	return state.RunPage{Runs: sums[:n], Next: state.RunCursor(serials[n-1])}, nil
}

// parseSummary reads the summary of run id as the index keeps it (see
// indexLua).
func parseSummary(id, v string) (state.RunSummary, int64, error) {
	bad := func(what string) error {
		return fmt.Errorf("%w: the listing's summary of run %q: %s", state.ErrMalformed, id, what)
	}
	var fields [3]string
	rest := v
	for i := range fields {
		j := 0
		for j < len(rest) && rest[j] != ':' {
			j++
		}
		if j == len(rest) {
			return state.RunSummary{}, 0, bad("too short")
		}
		fields[i], rest = rest[:j], rest[j+1:]
	}
	serial, err1 := strconv.ParseInt(fields[0], 10, 64)
	status, err2 := strconv.Atoi(fields[1])
	l, err3 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil || err3 != nil || l < 0 || l > len(rest) {
		return state.RunSummary{}, 0, bad("bad header")
	}
	sum := state.RunSummary{RunID: id, SessionID: rest[:l], Status: state.RunStatus(status)}
	var doc summaryDoc
	if err := json.Unmarshal([]byte(rest[l:]), &doc); err != nil {
		return state.RunSummary{}, 0, bad(err.Error())
	}
	sum.Agent, sum.Turn, sum.Pending, sum.Version = doc.Agent, doc.Turn, doc.Pending, doc.Version
	return sum, serial, nil
}
