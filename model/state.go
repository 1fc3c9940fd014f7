package model

// State is one consistent snapshot of the model. Nobody mutates a State or the
// values it holds once Store.Snapshot has returned it, so backends may keep it
// and compare it with the next one.
type State struct {
	// Generation counts snapshots; it grows by one per Snapshot.
	Generation uint64

	Pods         map[PodKey]*Pod
	Namespaces   map[string]*Namespace
	Policies     map[PolicyKey]*Policy
	ServicePorts map[ServicePortKey]*ServicePort
	// Endpoints holds the backends of each service port that has any; a port
	// absent here has none.
	Endpoints map[ServicePortKey]Endpoints
	Nodes     map[string]*Node
}

// cowMap is a map that can be handed out in a snapshot and then mutated: the
// first write after a snapshot copies it, so snapshots stay immutable and a
// kind that did not change is never copied.
type cowMap[K comparable, V any] struct {
	m      map[K]V
	shared bool
}

func (c *cowMap[K, V]) get(k K) (V, bool) {
	v, ok := c.m[k]
	return v, ok
}

func (c *cowMap[K, V]) writable() map[K]V {
	if c.m == nil {
		c.m = make(map[K]V)
	} else if c.shared {
		m := make(map[K]V, len(c.m)+1)
		for k, v := range c.m {
			m[k] = v
		}
		c.m = m
	}
	c.shared = false
	return c.m
}

func (c *cowMap[K, V]) put(k K, v V) { c.writable()[k] = v }

func (c *cowMap[K, V]) del(k K) {
	if _, ok := c.m[k]; ok {
		delete(c.writable(), k)
	}
}

// snapshot returns the map for a State; later writes will copy it first.
func (c *cowMap[K, V]) snapshot() map[K]V {
	if c.m == nil {
		c.m = make(map[K]V)
	}
	c.shared = true
	return c.m
}
