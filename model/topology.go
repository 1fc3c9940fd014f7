package model

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Topology-aware routing: which endpoints a node sends traffic of policy
// Cluster to. The EndpointSlice controller writes hints into the slices (for
// the service.kubernetes.io/topology-mode: Auto annotation and for
// spec.trafficDistribution); the proxy of each node follows them, as
// kube-proxy does (pkg/proxy/topology.go).

// Annotations that ask the EndpointSlice controller for zone hints.
const (
	AnnotationTopologyMode = "service.kubernetes.io/topology-mode"
	// AnnotationTopologyAwareHints is the annotation's name before 1.27.
	AnnotationTopologyAwareHints = "service.kubernetes.io/topology-aware-hints"
)

// TrafficDistribution is a service's preference for close endpoints.
type TrafficDistribution uint8

const (
	// DistributeAnywhere: no preference.
	DistributeAnywhere TrafficDistribution = iota
	// DistributeAuto: the topology-mode: Auto annotation; the controller's
	// hints share endpoints out among zones in proportion to their CPUs,
	// which only the hints say.
	DistributeAuto
	// DistributeSameZone: trafficDistribution PreferSameZone (or its old
	// name PreferClose).
	DistributeSameZone
	// DistributeSameNode: trafficDistribution PreferSameNode, then the
	// same zone.
	DistributeSameNode
)

func (d TrafficDistribution) String() string {
	switch d {
	case DistributeAuto:
		return "Auto"
	case DistributeSameZone:
		return corev1.ServiceTrafficDistributionPreferSameZone
	case DistributeSameNode:
		return corev1.ServiceTrafficDistributionPreferSameNode
	}
	return ""
}

// trafficDistribution reads spec.trafficDistribution, else the topology-mode
// annotation. Unknown values mean no preference, as the API defines.
func trafficDistribution(svc *corev1.Service) TrafficDistribution {
	if td := svc.Spec.TrafficDistribution; td != nil {
		switch *td {
		case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone:
			return DistributeSameZone
		case corev1.ServiceTrafficDistributionPreferSameNode:
			return DistributeSameNode
		}
	}
	mode, ok := svc.Annotations[AnnotationTopologyMode]
	if !ok {
		mode = svc.Annotations[AnnotationTopologyAwareHints]
	}
	if strings.EqualFold(mode, "auto") {
		return DistributeAuto
	}
	return DistributeAnywhere
}

// EndpointHints are an endpoint's topology hints: the zones and nodes whose
// proxies should send it traffic. Sorted; shared, never modified.
type EndpointHints struct {
	ForZones, ForNodes []string
}

func (h *EndpointHints) equal(o *EndpointHints) bool {
	if h == nil || o == nil {
		return h == o
	}
	return slices.Equal(h.ForZones, o.ForZones) && slices.Equal(h.ForNodes, o.ForNodes)
}

func (h *EndpointHints) forZone(zone string) bool {
	return h != nil && slices.Contains(h.ForZones, zone)
}

func (h *EndpointHints) forNode(node string) bool {
	return h != nil && slices.Contains(h.ForNodes, node)
}

// hintsOf derives the hints the EndpointSlice controller gives an endpoint
// for a trafficDistribution: its own zone, and for PreferSameNode its own
// node too. Nil for other distributions.
func hintsOf(e *Endpoint, d TrafficDistribution) *EndpointHints {
	var h EndpointHints
	switch d {
	case DistributeSameNode:
		if e.Node != "" {
			h.ForNodes = []string{e.Node}
		}
		fallthrough
	case DistributeSameZone:
		if e.Zone != "" {
			h.ForZones = []string{e.Zone}
		}
	default:
		return nil
	}
	return &h
}

// topologyMode says which hints to follow: those for this node when every
// ready endpoint has a node hint and one is for this node, else those for
// this node's zone when every ready endpoint has a zone hint and one is for
// this zone, else none (every endpoint), as kube-proxy decides.
func topologyMode(ready []*Endpoint, hints func(*Endpoint) *EndpointHints, node, zone string) TrafficDistribution {
	if len(ready) == 0 {
		return DistributeAnywhere
	}
	allNode, allZone, forNode, forZone := true, true, false, false
	for _, e := range ready {
		h := hints(e)
		if h == nil || len(h.ForNodes) == 0 {
			allNode = false
		} else if h.forNode(node) {
			forNode = true
		}
		if h == nil || len(h.ForZones) == 0 {
			allZone = false
		} else if zone != "" && h.forZone(zone) {
			forZone = true
		}
	}
	switch {
	case allNode && forNode:
		return DistributeSameNode
	case allZone && forZone:
		return DistributeSameZone
	}
	return DistributeAnywhere
}

// ClusterServing picks the endpoints a node sends traffic of policy Cluster
// to at a service address of family is4: Serving's ready endpoints narrowed
// by topology, or, when none is ready, the serving terminating ones of any
// topology (there is no topology fallback left to choose then).
//
// The hints are the EndpointSlices'. When no ready endpoint has any hint
// (a controller that does not write them) and the service asks for
// PreferSameZone or PreferSameNode, they are the ones the EndpointSlice
// controller would give: each endpoint's own zone and node. The Auto
// annotation's hints cannot be derived; without them every endpoint serves.
func (e Endpoints) ClusterServing(is4 bool, node *Node, dist TrafficDistribution) Endpoints {
	var nodeName, zone string
	if node != nil {
		nodeName, zone = node.Name, node.Zone
	}
	hinted := slices.ContainsFunc(e, func(ep Endpoint) bool { return ep.Hints != nil && ep.Addr.Is4() == is4 && ep.Ready })
	if !hinted && dist != DistributeSameZone && dist != DistributeSameNode {
		return e.Serving(is4, false, nodeName) // the common case: no topology
	}
	var ready []*Endpoint
	for i := range e {
		if ep := &e[i]; ep.Addr.Is4() == is4 && ep.Ready {
			ready = append(ready, ep)
		}
	}
	if len(ready) == 0 {
		return e.Serving(is4, false, nodeName)
	}
	hints := func(ep *Endpoint) *EndpointHints { return ep.Hints }
	if !hinted {
		hints = func(ep *Endpoint) *EndpointHints { return hintsOf(ep, dist) }
	}
	mode := topologyMode(ready, hints, nodeName, zone)
	out := make(Endpoints, 0, len(ready))
	for _, ep := range ready {
		switch {
		case mode == DistributeSameNode && !hints(ep).forNode(nodeName):
		case mode == DistributeSameZone && !hints(ep).forZone(zone):
		default:
			out = append(out, *ep)
		}
	}
	return out
}
