package embed

import (
	"container/list"
	"sync"
)

// DefaultQueryCacheSize is how many recent query vectors Dense keeps.
// Agents repeat queries, and the profiler runs each query once per
// configuration; a cached query costs no round trip to the provider.
const DefaultQueryCacheSize = 256

// lru is a small least-recently-used map from query text to unit vector,
// safe for concurrent use. A nil *lru holds nothing.
type lru struct {
	mu    sync.Mutex
	size  int
	items map[string]*list.Element
	order *list.List // front = most recent; values are *lruEntry
}

type lruEntry struct {
	key string
	vec []float32
}

func newLRU(size int) *lru {
	return &lru{size: size, items: map[string]*list.Element{}, order: list.New()}
}

func (c *lru) get(key string) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).vec, true
}

func (c *lru) put(key string, vec []float32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry).vec = vec
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, vec: vec})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry).key)
	}
}
