package redis

// SessionKeys returns the keys of a session, for tests.
func (s *Store) SessionKeys(sessionID string) []string { return s.keys(sessionID) }

// ClearedKeys returns the keys of a session that Clear removes, for tests.
func (s *Store) ClearedKeys(sessionID string) []string { return s.keys(sessionID)[:clearKeys] }

// RunKeys returns the keys of a run's checkpoint, for tests.
func (s *Store) RunKeys(runID string) []string { return s.runKeys(runID) }

// CachedPlace returns the place the store remembers run runID of session
// sessionID by, or "", for tests.
func (s *Store) CachedPlace(sessionID, runID string) string { return s.places.get(sessionID, runID) }
