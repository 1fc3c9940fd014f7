package model

import (
	"slices"
	"sync"
	"time"
)

// Store holds the current model. Watchers write converted objects into it with
// the Set methods, which report whether the model changed; syncs take Snapshots.
// It is safe for concurrent use.
type Store struct {
	now func() time.Time

	// mu protects the fields below.
	mu           sync.Mutex
	pods         cowMap[PodKey, *Pod]
	namespaces   cowMap[string, *Namespace]
	policies     cowMap[PolicyKey, *Policy]
	servicePorts cowMap[ServicePortKey, *ServicePort]
	endpoints    cowMap[ServicePortKey, Endpoints]
	nodes        cowMap[string, *Node]

	// portsOf indexes service ports by service; slices and slicesOf hold the
	// EndpointSlices that endpoints are joined from. A service has one slice
	// or a few, so slicesOf lists their keys: a map per service cost ~330
	// bytes at 10,000 services.
	portsOf  map[ServiceKey][]ServicePortKey
	slices   map[SliceKey]*EndpointSlice
	slicesOf map[ServiceKey][]SliceKey

	pending Changes
	last    *State
}

// NewStore returns an empty store; now stamps changes (time.Now when nil).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:      now,
		portsOf:  make(map[ServiceKey][]ServicePortKey),
		slices:   make(map[SliceKey]*EndpointSlice),
		slicesOf: make(map[ServiceKey][]SliceKey),
		last:     &State{},
	}
}

// equaler is the comparison every model value offers.
type equaler[V any] interface{ Equal(V) bool }

// set writes v (nil deletes) under k and records k as changed when the value
// differs from the one held.
func set[K comparable, V equaler[V]](s *Store, m *cowMap[K, V], changed *KeySet[K], k K, v V, remove bool) bool {
	old, ok := m.get(k)
	if remove {
		if !ok {
			return false
		}
		m.del(k)
	} else {
		if ok && old.Equal(v) {
			return false
		}
		m.put(k, v)
	}
	changed.Add(k)
	s.touch()
	return true
}

func (s *Store) touch() {
	if s.pending.Since.IsZero() {
		s.pending.Since = s.now()
	}
}

// SetPod sets the pod under key; nil removes it.
func (s *Store) SetPod(key PodKey, p *Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return set(s, &s.pods, &s.pending.Pods, key, p, p == nil)
}

// SetNamespace sets a namespace; nil removes it.
func (s *Store) SetNamespace(name string, ns *Namespace) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return set(s, &s.namespaces, &s.pending.Namespaces, name, ns, ns == nil)
}

// SetPolicy sets a policy; nil removes it.
func (s *Store) SetPolicy(key PolicyKey, p *Policy) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return set(s, &s.policies, &s.pending.Policies, key, p, p == nil)
}

// SetNode sets a node; nil removes it.
func (s *Store) SetNode(name string, n *Node) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return set(s, &s.nodes, &s.pending.Nodes, name, n, n == nil)
}

// SetService replaces all ports of a service; none removes the service. Ports
// that appear get their endpoints joined from the slices already held.
func (s *Store) SetService(key ServiceKey, ports []*ServicePort) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	keep := make(map[ServicePortKey]bool, len(ports))
	for _, p := range ports {
		keep[p.Key] = true
	}
	for _, old := range s.portsOf[key] {
		if !keep[old] {
			changed = set(s, &s.servicePorts, &s.pending.ServicePorts, old, nil, true) || changed
			s.setEndpoints(old, nil)
		}
	}
	keys := make([]ServicePortKey, 0, len(ports))
	for _, p := range ports {
		_, existed := s.servicePorts.get(p.Key)
		changed = set(s, &s.servicePorts, &s.pending.ServicePorts, p.Key, p, false) || changed
		if !existed {
			changed = s.setEndpoints(p.Key, joinEndpoints(p.Key, s.slicesOfService(key))) || changed
		}
		keys = append(keys, p.Key)
	}
	if len(keys) == 0 {
		delete(s.portsOf, key)
	} else {
		s.portsOf[key] = keys
	}
	return changed
}

// SetEndpointSlice sets an EndpointSlice; nil removes it. It reports a change
// only when the endpoints of a proxied service port changed, so the slices of
// services nfrouter does not proxy never wake a sync.
func (s *Store) SetEndpointSlice(key SliceKey, sl *EndpointSlice) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.slices[key]
	if old.Equal(sl) {
		return false
	}
	if old != nil {
		if keys := slices.DeleteFunc(s.slicesOf[old.Service], func(k SliceKey) bool { return k == key }); len(keys) == 0 {
			delete(s.slicesOf, old.Service)
		} else {
			s.slicesOf[old.Service] = keys
		}
		delete(s.slices, key)
	}
	if sl != nil {
		s.slices[key] = sl
		if !slices.Contains(s.slicesOf[sl.Service], key) {
			s.slicesOf[sl.Service] = append(s.slicesOf[sl.Service], key)
		}
	}
	changed := false
	if old != nil {
		changed = s.rejoin(old.Service)
	}
	if sl != nil && (old == nil || old.Service != sl.Service) {
		changed = s.rejoin(sl.Service) || changed
	}
	if changed && sl != nil && !sl.TriggerTime.IsZero() {
		if t, ok := s.pending.TriggerTimes[sl.Service]; !ok || sl.TriggerTime.Before(t) {
			if s.pending.TriggerTimes == nil {
				s.pending.TriggerTimes = map[ServiceKey]time.Time{}
			}
			s.pending.TriggerTimes[sl.Service] = sl.TriggerTime
		}
	}
	return changed
}

// rejoin recomputes the endpoints of every port of a service.
func (s *Store) rejoin(svc ServiceKey) bool {
	ports := s.portsOf[svc]
	if len(ports) == 0 {
		return false
	}
	slices := s.slicesOfService(svc)
	changed := false
	for _, k := range ports {
		changed = s.setEndpoints(k, joinEndpoints(k, slices)) || changed
	}
	return changed
}

func (s *Store) setEndpoints(k ServicePortKey, eps Endpoints) bool {
	return set(s, &s.endpoints, &s.pending.Endpoints, k, eps, len(eps) == 0)
}

func (s *Store) slicesOfService(svc ServiceKey) []*EndpointSlice {
	keys := s.slicesOf[svc]
	out := make([]*EndpointSlice, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.slices[k])
	}
	return out
}

// Pending reports whether anything changed since the last snapshot.
func (s *Store) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending.Len() > 0
}

// Snapshot returns the current state and what changed since the previous
// snapshot. Keys whose value went back to what the previous snapshot held are
// left out, so a change undone before a sync costs the backends nothing.
func (s *Store) Snapshot() (*State, *Changes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &State{
		Generation:   s.last.Generation + 1,
		Pods:         s.pods.snapshot(),
		Namespaces:   s.namespaces.snapshot(),
		Policies:     s.policies.snapshot(),
		ServicePorts: s.servicePorts.snapshot(),
		Endpoints:    s.endpoints.snapshot(),
		Nodes:        s.nodes.snapshot(),
	}
	c := s.pending
	dropReverted(c.Pods, s.last.Pods, st.Pods)
	dropReverted(c.Namespaces, s.last.Namespaces, st.Namespaces)
	dropReverted(c.Policies, s.last.Policies, st.Policies)
	dropReverted(c.ServicePorts, s.last.ServicePorts, st.ServicePorts)
	dropReverted(c.Endpoints, s.last.Endpoints, st.Endpoints)
	dropReverted(c.Nodes, s.last.Nodes, st.Nodes)
	if c.Len() == 0 {
		c.Since = time.Time{}
	}
	// A trigger time counts while its service's endpoints still differ.
	for svc := range c.TriggerTimes {
		if !slices.ContainsFunc(s.portsOf[svc], func(k ServicePortKey) bool { return c.Endpoints.Has(k) }) {
			delete(c.TriggerTimes, svc)
		}
	}
	s.pending = Changes{}
	s.last = st
	return st, &c
}

func dropReverted[K comparable, V equaler[V]](keys KeySet[K], before, after Map[K, V]) {
	for k := range keys {
		b, inBefore := before.Lookup(k)
		a, inAfter := after.Lookup(k)
		if inBefore == inAfter && (!inAfter || b.Equal(a)) {
			delete(keys, k)
		}
	}
}
