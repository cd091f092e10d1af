package session

// Held returns the bytes the cache counts and the number of sessions it
// holds.
func (c *Cache) Held() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.lru.Len()
}
