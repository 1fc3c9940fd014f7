package model

import "time"

// KeySet is a set of keys of one kind.
type KeySet[K comparable] map[K]struct{}

// Add adds k to the set, allocating it on first use.
func (s *KeySet[K]) Add(k K) {
	if *s == nil {
		*s = make(KeySet[K])
	}
	(*s)[k] = struct{}{}
}

// Has reports whether k is in the set.
func (s KeySet[K]) Has(k K) bool {
	_, ok := s[k]
	return ok
}

// Changes are the keys whose values differ between two snapshots, per kind.
type Changes struct {
	// Full asks a backend to ignore the keys and make the kernel match the whole
	// state, reading back its own objects: the first sync, the periodic drift
	// check, and every sync after a failure.
	Full bool

	Pods         KeySet[PodKey]
	Namespaces   KeySet[string]
	Policies     KeySet[PolicyKey]
	ServicePorts KeySet[ServicePortKey]
	Endpoints    KeySet[ServicePortKey]
	Nodes        KeySet[string]

	// Since is when the oldest of these changes was observed; zero when there
	// are none. It measures event-to-kernel latency.
	Since time.Time
	// TriggerTimes are, per service whose endpoints changed, the earliest
	// trigger time (EndpointSlice.TriggerTime) of the changes: network
	// programming latency is measured from them, as kube-proxy does.
	TriggerTimes map[ServiceKey]time.Time
}

// Len is the number of changed keys of all kinds.
func (c *Changes) Len() int {
	return len(c.Pods) + len(c.Namespaces) + len(c.Policies) + len(c.ServicePorts) + len(c.Endpoints) + len(c.Nodes)
}

// Empty reports whether nothing changed and no full sync is asked for.
func (c *Changes) Empty() bool { return !c.Full && c.Len() == 0 }

// Kinds is a set of object kinds, for a backend to say which changes it reads.
type Kinds uint8

// The kinds of Changes.
const (
	KindPods Kinds = 1 << iota
	KindNamespaces
	KindPolicies
	KindServicePorts
	KindEndpoints
	KindNodes

	AllKinds = KindPods | KindNamespaces | KindPolicies | KindServicePorts | KindEndpoints | KindNodes
)

// Only returns the changes of the given kinds; the result shares c's sets.
func (c *Changes) Only(k Kinds) *Changes {
	out := &Changes{Full: c.Full}
	if k&KindPods != 0 {
		out.Pods = c.Pods
	}
	if k&KindNamespaces != 0 {
		out.Namespaces = c.Namespaces
	}
	if k&KindPolicies != 0 {
		out.Policies = c.Policies
	}
	if k&KindServicePorts != 0 {
		out.ServicePorts = c.ServicePorts
	}
	if k&KindEndpoints != 0 {
		out.Endpoints = c.Endpoints
		out.TriggerTimes = c.TriggerTimes
	}
	if k&KindNodes != 0 {
		out.Nodes = c.Nodes
	}
	if out.Len() > 0 {
		out.Since = c.Since
	}
	return out
}
