package redis

import "sync"

// placeCache remembers the place of each run a store appended to, per
// session, so that the next append of the run can send its members,
// positions and index entries already joined to the place (see
// appendArgs), and the script only checks that place and writes them.
//
// A cached place is a hint, never trusted: the script compares it with
// the place the session holds, and on any difference (the session was
// cleared, by this store or another worker, and the run placed anew)
// takes the general path, which returns the place it used. So a place
// cached by one process is as good as one read from Redis, whatever
// other processes do to the session meanwhile.
//
// The cache holds at most maxPlaces runs; when full it starts again
// empty, and an append of a run it forgot takes the general path once.
type placeCache struct {
	mu     sync.RWMutex
	places map[runKey]string
}

// A runKey names a run of a session in the place cache.
type runKey struct{ session, run string }

const maxPlaces = 4096

// get returns the cached place of run runID in session sid, or "".
func (c *placeCache) get(sid, runID string) string {
	c.mu.RLock()
	p := c.places[runKey{sid, runID}]
	c.mu.RUnlock()
	return p
}

// set caches place as the place of run runID in session sid.
func (c *placeCache) set(sid, runID, place string) {
	k := runKey{sid, runID}
	c.mu.Lock()
	if c.places[k] != place {
		if c.places == nil || len(c.places) >= maxPlaces {
			c.places = make(map[runKey]string)
		}
		c.places[k] = place
	}
	c.mu.Unlock()
}
