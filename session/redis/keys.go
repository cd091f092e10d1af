package redis

import "strings"

// tagged returns the hash-tagged name of the object of the given kind
// ("session", "checkpoint") with the ID id: prefix+kind+":{"+id+"}". Every
// key of one session, and every key of one run, starts with it, so in a
// Redis Cluster they share one hash slot.
//
// Redis hashes the part between the first "{" and the first "}" after it.
// An ID with a "}" would cut that tag short (two sessions would share a
// slot) or empty it (the keys of one session would be hashed whole, each
// to its own slot). Such an ID, and one with a "{", is escaped instead:
// "%" becomes "%25", "{" "%7B" and "}" "%7D", under kind+"%" (so
// prefix+kind+"%:{"+escaped+"}"). No ID without braces maps there, and IDs
// without braces keep the names they always had.
func (s *Store) tagged(kind, id string) string {
	var b strings.Builder
	s.writeTagged(&b, kind, id)
	return b.String()
}

// writeTagged writes the hash-tagged name of tagged to b.
func (s *Store) writeTagged(b *strings.Builder, kind, id string) {
	b.Grow(len(s.prefix) + len(kind) + len(id) + 4)
	b.WriteString(s.prefix)
	b.WriteString(kind)
	if !strings.ContainsAny(id, "{}") {
		b.WriteString(":{")
		b.WriteString(id)
		b.WriteByte('}')
		return
	}
	b.WriteString("%:{")
	for i := 0; i < len(id); i++ {
		switch c := id[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('}')
}

// keys returns the session's keys: the sorted set of items, the hash of run
// places, the counter of places, the sorted set of calls, the hash of
// the outputs of calls, the sorted set of the items' write stamps (member
// an item's position, score its stamp; an item stored before stamps has
// none, and counts as stamped 0) and the counter of stamps, which Clear
// keeps (the last key: see clearKeys). They share a hash tag.
//
// A member of the calls set is a call's run place, its ID key (the ID's
// length in 8 hex digits, then the ID) and its Seq, so that the latest
// call of a run with an ID before a position is one ZREVRANGEBYLEX. The outputs hash maps a call (place, ID
// key, the call's Seq, or 16 zeros for an output with no call before it)
// to the Seq of its output, and "r" and an item's position to what Pop
// must remove with the item: "c" and its calls member, or "a" and its
// outputs field.
//
// The keys are slices of one string, written once: one allocation for the
// seven, not one each.
func (s *Store) keys(sessionID string) []string {
	return s.appendKeys(make([]string, 0, len(sessionKeySuffixes)), sessionID)
}

// appendKeys appends the session's keys (see keys) to dst.
func (s *Store) appendKeys(dst []string, sessionID string) []string {
	var b strings.Builder
	b.Grow(len(sessionKeySuffixes)*(len(s.prefix)+len(sessionID)+16) + sessionKeySuffixLen)
	s.writeTagged(&b, "session", sessionID)
	tag := b.String() // the builder's bytes so far, which later writes leave as they are
	for i, suffix := range sessionKeySuffixes {
		if i > 0 {
			b.WriteString(tag)
		}
		b.WriteString(suffix)
	}
	all := b.String()
	at := 0
	for _, suffix := range sessionKeySuffixes {
		n := len(tag) + len(suffix)
		dst = append(dst, all[at:at+n])
		at += n
	}
	return dst
}

// sessionKeySuffixes are the names of a session's keys after its tag, in
// the order of keys; sessionKeySuffixLen is their length in all.
var sessionKeySuffixes = [...]string{":items", ":runs", ":places", ":calls", ":outputs", ":stamps", ":stamp"}

var sessionKeySuffixLen = func() (n int) {
	for _, s := range sessionKeySuffixes {
		n += len(s)
	}
	return n
}()

// genKey returns the session's generation, a counter that Pop and Clear
// move on (see [session.Changes]), under the session's hash tag. It is not
// among keys, which an append passes whole: an append does not touch it.
func (s *Store) genKey(sessionID string) string {
	return s.tagged("session", sessionID) + ":gen"
}

// clearKeys is the number of a session's keys (see keys) that Clear
// removes: all but the counter of stamps, so that a session's stamps only
// go up (and it keeps the generation, genKey, too).
const clearKeys = 6

// runKeys returns the keys of a run's checkpoint: the head hash (fields v,
// the version, and d, the head or a whole checkpoint of an earlier
// format), the hash of its items (field Seq in decimal, value
// "<version>:<item JSON>") and its context (a string). They share a hash
// tag.
func (s *Store) runKeys(runID string) []string {
	return s.appendRunKeys(make([]string, 0, 3), runID)
}

// appendRunKeys appends the run's keys (see runKeys) to dst: slices of
// one string, "<head>:items<head>:context".
func (s *Store) appendRunKeys(dst []string, runID string) []string {
	var b strings.Builder
	b.Grow(2*(len(s.prefix)+len(runID)+16) + len(":items:context"))
	s.writeTagged(&b, "checkpoint", runID)
	head := b.String()
	b.WriteString(":items")
	b.WriteString(head)
	b.WriteString(":context")
	all := b.String()
	n := len(head) + len(":items")
	return append(dst, all[:len(head)], all[:n], all[n:])
}
