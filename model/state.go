package model

import (
	"hash/maphash"
	"iter"
)

// State is one consistent snapshot of the model. Nobody mutates a State or the
// values it holds once Store.Snapshot has returned it, so backends may keep it
// and compare it with the next one.
type State struct {
	// Generation counts snapshots; it grows by one per Snapshot.
	Generation uint64

	Pods         Map[PodKey, *Pod]
	Namespaces   Map[string, *Namespace]
	Policies     Map[PolicyKey, *Policy]
	ServicePorts Map[ServicePortKey, *ServicePort]
	// Endpoints holds the backends of each service port that has any; a port
	// absent here has none.
	Endpoints Map[ServicePortKey, Endpoints]
	Nodes     Map[string, *Node]
}

// mapShards is how many maps a Map's entries are spread over. A write after a
// snapshot copies one of them, so it costs 1/mapShards of the kind's entries
// (about 40 of 10,000 services) instead of all of them: at scale that copy was
// most of the garbage, and so most of the CPU, of an endpoint change.
const mapShards = 256

// Map is a read-only map of one kind of a State. The zero Map is empty.
type Map[K comparable, V any] struct{ t *shardTable[K, V] }

// shardTable holds a Map's entries. Snapshots share it and its shards; the
// Store copies the table and then each shard it writes to (cowMap).
type shardTable[K comparable, V any] struct {
	seed   maphash.Seed
	n      int
	shards [mapShards]map[K]V
}

func newShardTable[K comparable, V any]() *shardTable[K, V] {
	return &shardTable[K, V]{seed: maphash.MakeSeed()}
}

func (t *shardTable[K, V]) shardOf(k K) int {
	return int(maphash.Comparable(t.seed, k) % mapShards)
}

// MapOf returns a Map holding a copy of m's entries; for building states in
// tests and tools.
func MapOf[K comparable, V any](m map[K]V) Map[K, V] {
	var c cowMap[K, V]
	for k, v := range m {
		c.put(k, v)
	}
	return c.snapshot()
}

// With returns a Map that holds v under k and m's other entries; m is left
// as it was. It copies one shard; the Store writes through cowMap instead.
func (m Map[K, V]) With(k K, v V) Map[K, V] {
	c := cowMap[K, V]{t: m.t, tableShared: true}
	c.put(k, v)
	return c.snapshot()
}

// Without returns a Map that holds m's entries but k's; m is left as it was.
func (m Map[K, V]) Without(k K) Map[K, V] {
	c := cowMap[K, V]{t: m.t, tableShared: true}
	c.del(k)
	return c.snapshot()
}

// Get returns the value under k; the zero value when there is none.
func (m Map[K, V]) Get(k K) V {
	v, _ := m.Lookup(k)
	return v
}

// Lookup returns the value under k and whether there is one.
func (m Map[K, V]) Lookup(k K) (V, bool) {
	if m.t == nil {
		var zero V
		return zero, false
	}
	v, ok := m.t.shards[m.t.shardOf(k)][k]
	return v, ok
}

// Has reports whether there is a value under k.
func (m Map[K, V]) Has(k K) bool {
	_, ok := m.Lookup(k)
	return ok
}

// Len is the number of entries.
func (m Map[K, V]) Len() int {
	if m.t == nil {
		return 0
	}
	return m.t.n
}

// All yields every entry, in no particular order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.t == nil {
			return
		}
		for _, s := range m.t.shards {
			for k, v := range s {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Keys yields every key, in no particular order.
func (m Map[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Values yields every value, in no particular order.
func (m Map[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range m.All() {
			if !yield(v) {
				return
			}
		}
	}
}

// cowMap is the Store's writable side of a Map: it can be handed out in a
// snapshot and then mutated. The first write after a snapshot copies the
// table of shards (mapShards pointers), the first write to a shard copies
// that shard, so snapshots stay immutable and the cost of a write does not
// grow with the kind's size beyond one shard.
type cowMap[K comparable, V any] struct {
	t *shardTable[K, V]
	// tableShared says a snapshot holds t; sharedShards says, per shard, that
	// a snapshot holds the shard's map.
	tableShared  bool
	sharedShards [mapShards / 64]uint64
}

func (c *cowMap[K, V]) get(k K) (V, bool) { return Map[K, V]{c.t}.Lookup(k) }

// writableShard returns the shard that holds k, ready to be written.
func (c *cowMap[K, V]) writableShard(k K) map[K]V {
	if c.t == nil {
		c.t = newShardTable[K, V]()
	} else if c.tableShared {
		t := *c.t
		c.t = &t
		for i := range c.sharedShards {
			c.sharedShards[i] = ^uint64(0)
		}
	}
	c.tableShared = false
	i := c.t.shardOf(k)
	word, bit := i/64, uint64(1)<<(i%64)
	s := c.t.shards[i]
	if c.sharedShards[word]&bit != 0 {
		c.sharedShards[word] &^= bit
		copied := make(map[K]V, len(s)+1)
		for k, v := range s {
			copied[k] = v
		}
		s = copied
		c.t.shards[i] = s
	}
	if s == nil {
		s = make(map[K]V)
		c.t.shards[i] = s
	}
	return s
}

func (c *cowMap[K, V]) put(k K, v V) {
	s := c.writableShard(k)
	if _, ok := s[k]; !ok {
		c.t.n++
	}
	s[k] = v
}

func (c *cowMap[K, V]) del(k K) {
	if _, ok := c.get(k); ok {
		delete(c.writableShard(k), k)
		c.t.n--
	}
}

// snapshot returns the map for a State; later writes will copy what they
// touch first.
func (c *cowMap[K, V]) snapshot() Map[K, V] {
	if c.t == nil {
		c.t = newShardTable[K, V]()
	}
	c.tableShared = true
	return Map[K, V]{c.t}
}
