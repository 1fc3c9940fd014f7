package model

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// SliceKey names an EndpointSlice.
type SliceKey struct{ Namespace, Name string }

// EndpointSlice is the part of an EndpointSlice the proxy reads. Several slices
// make up the endpoints of one service; Store joins them per service port.
type EndpointSlice struct {
	Service   ServiceKey
	Ports     []SlicePort
	Endpoints []SliceEndpoint
	// TriggerTime is the slice's endpoints.kubernetes.io/last-change-trigger-time:
	// when the change it carries began (a pod became ready, say); zero when
	// absent. It measures network programming latency and is not compared.
	TriggerTime time.Time
}

// AnnotationTriggerTime is the EndpointSlice annotation kube-proxy measures
// network programming latency from.
const AnnotationTriggerTime = "endpoints.kubernetes.io/last-change-trigger-time"

// SlicePort is one port of an EndpointSlice; Name and Protocol match it to a
// service port.
type SlicePort struct {
	Name     string
	Protocol Protocol
	Port     uint16
}

// SliceEndpoint is one endpoint of an EndpointSlice.
type SliceEndpoint struct {
	Addr       netip.Addr
	Node, Zone string
	Conditions EndpointConditions
	// Hints are the endpoint's topology hints, nil when it has none.
	Hints *EndpointHints
}

func (e SliceEndpoint) equal(o SliceEndpoint) bool {
	return e.Addr == o.Addr && e.Node == o.Node && e.Zone == o.Zone && e.Conditions == o.Conditions && e.Hints.equal(o.Hints)
}

// EndpointConditions are an endpoint's readiness conditions.
type EndpointConditions struct {
	Ready, Serving, Terminating bool
}

// Endpoint is one backend of a service port.
type Endpoint struct {
	Addr       netip.Addr
	Port       uint16
	Node, Zone string
	EndpointConditions
	// Hints are the endpoint's topology hints, nil when it has none.
	Hints *EndpointHints
}

func (e Endpoint) equal(o Endpoint) bool {
	return e.Addr == o.Addr && e.Port == o.Port && e.Node == o.Node && e.Zone == o.Zone &&
		e.EndpointConditions == o.EndpointConditions && e.Hints.equal(o.Hints)
}

// Endpoints are the backends of one service port, sorted by address and port.
type Endpoints []Endpoint

// Equal reports whether two endpoint lists are the same.
func (e Endpoints) Equal(o Endpoints) bool { return slices.EqualFunc(e, o, Endpoint.equal) }

// EndpointSliceFromAPI converts an EndpointSlice. It returns nil for slices the
// proxy never reads: FQDN slices, slices of headless services (the
// service.kubernetes.io/headless label) and slices that name no service.
func EndpointSliceFromAPI(s *discoveryv1.EndpointSlice) *EndpointSlice {
	if s.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	if _, headless := s.Labels[LabelHeadless]; headless {
		return nil
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	out := &EndpointSlice{Service: ServiceKey{s.Namespace, svc}, Endpoints: make([]SliceEndpoint, 0, len(s.Endpoints))}
	for _, p := range s.Ports {
		if p.Port == nil || *p.Port < 1 || *p.Port > 65535 {
			continue
		}
		sp := SlicePort{Port: uint16(*p.Port), Protocol: TCP}
		if p.Name != nil {
			sp.Name = *p.Name
		}
		if p.Protocol != nil {
			proto, err := protocolFromAPI(*p.Protocol)
			if err != nil {
				continue
			}
			sp.Protocol = proto
		}
		out.Ports = append(out.Ports, sp)
	}
	for _, e := range s.Endpoints {
		if len(e.Addresses) == 0 {
			continue
		}
		// Like kube-proxy, use the first address: the API defines the others as
		// interchangeable and nothing sets them.
		addr, err := netip.ParseAddr(e.Addresses[0])
		if err != nil {
			continue
		}
		se := SliceEndpoint{Addr: addr.Unmap(), Conditions: conditions(e.Conditions)}
		if e.NodeName != nil {
			se.Node = *e.NodeName
		}
		if e.Zone != nil {
			se.Zone = *e.Zone
		}
		se.Hints = hintsFromAPI(e.Hints)
		out.Endpoints = append(out.Endpoints, se)
	}
	if t, err := time.Parse(time.RFC3339Nano, s.Annotations[AnnotationTriggerTime]); err == nil {
		out.TriggerTime = t
	}
	return out
}

// conditions reads the API's tri-state conditions: an unknown Ready or Serving
// counts as true, an unknown Terminating as false, as the API documents.
func conditions(c discoveryv1.EndpointConditions) EndpointConditions {
	isTrue := func(b *bool, unknown bool) bool {
		if b == nil {
			return unknown
		}
		return *b
	}
	return EndpointConditions{
		Ready:       isTrue(c.Ready, true),
		Serving:     isTrue(c.Serving, true),
		Terminating: isTrue(c.Terminating, false),
	}
}

// Equal reports whether two slices, either of which may be nil, are the same.
func (s *EndpointSlice) Equal(o *EndpointSlice) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Service == o.Service && slices.Equal(s.Ports, o.Ports) && slices.EqualFunc(s.Endpoints, o.Endpoints, SliceEndpoint.equal)
}

// hintsFromAPI converts an endpoint's hints; nil when there are none.
func hintsFromAPI(h *discoveryv1.EndpointHints) *EndpointHints {
	if h == nil || len(h.ForZones) == 0 && len(h.ForNodes) == 0 {
		return nil
	}
	out := &EndpointHints{}
	for _, z := range h.ForZones {
		out.ForZones = append(out.ForZones, z.Name)
	}
	for _, n := range h.ForNodes {
		out.ForNodes = append(out.ForNodes, n.Name)
	}
	slices.Sort(out.ForZones)
	slices.Sort(out.ForNodes)
	out.ForZones, out.ForNodes = slices.Compact(out.ForZones), slices.Compact(out.ForNodes)
	return out
}

// joinEndpoints returns the endpoints of one service port from all slices of
// its service: every endpoint of every slice that has a port of that name and
// protocol, deduplicated (an endpoint may sit in two slices while the
// controller moves it) and sorted.
func joinEndpoints(key ServicePortKey, slicesOfService []*EndpointSlice) Endpoints {
	// Sized up front: at scale these are the model's largest slices, and
	// append's doubling would leave up to half of each unused.
	n := 0
	for _, s := range slicesOfService {
		for _, p := range s.Ports {
			if p.Name == key.Port && p.Protocol == key.Protocol {
				n += len(s.Endpoints)
			}
		}
	}
	if n == 0 {
		return nil
	}
	out := make(Endpoints, 0, n)
	for _, s := range slicesOfService {
		for _, p := range s.Ports {
			if p.Name != key.Port || p.Protocol != key.Protocol {
				continue
			}
			for _, e := range s.Endpoints {
				out = append(out, Endpoint{Addr: e.Addr, Port: p.Port, Node: e.Node, Zone: e.Zone, EndpointConditions: e.Conditions, Hints: e.Hints})
			}
		}
	}
	slices.SortFunc(out, compareEndpoint)
	return slices.CompactFunc(out, func(a, b Endpoint) bool { return a.Addr == b.Addr && a.Port == b.Port })
}

func compareEndpoint(a, b Endpoint) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	if a.Port != b.Port {
		return int(a.Port) - int(b.Port)
	}
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	// Of duplicates, keep the readiest one first so that CompactFunc keeps it
	// whatever order the slices came in.
	return rank(b.EndpointConditions) - rank(a.EndpointConditions)
}

func rank(c EndpointConditions) int {
	r := 0
	if c.Ready {
		r += 4
	}
	if c.Serving {
		r += 2
	}
	if !c.Terminating {
		r++
	}
	return r
}
