package model

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterServingFollowsTopology states kube-proxy's topology rules
// (pkg/proxy/topology.go) as cases: hints are followed only when every ready
// endpoint has them and some are for this node (or its zone); otherwise
// every endpoint serves.
func TestClusterServingFollowsTopology(t *testing.T) {
	zones := func(z ...string) *EndpointHints { return &EndpointHints{ForZones: z} }
	nodes := func(n string, z ...string) *EndpointHints { return &EndpointHints{ForNodes: []string{n}, ForZones: z} }
	ep := func(last byte, node, zone string, h *EndpointHints) Endpoint {
		return Endpoint{Addr: netip.AddrFrom4([4]byte{10, 0, 0, last}), Port: 80, Node: node, Zone: zone, Hints: h,
			EndpointConditions: EndpointConditions{Ready: true, Serving: true}}
	}
	terminating := func(e Endpoint) Endpoint {
		e.EndpointConditions = EndpointConditions{Serving: true, Terminating: true}
		return e
	}
	here := &Node{Name: "n1", Zone: "a"}
	for _, tc := range []struct {
		name string
		eps  Endpoints
		node *Node
		dist TrafficDistribution
		want []byte // last octets
	}{
		{"no hints: all", Endpoints{ep(1, "n1", "a", nil), ep(2, "n2", "b", nil)}, here, DistributeAnywhere, []byte{1, 2}},
		{"zone hints: this zone's", Endpoints{ep(1, "n2", "a", zones("a")), ep(2, "n3", "b", zones("b")), ep(3, "n4", "a", zones("a"))}, here, DistributeAnywhere, []byte{1, 3}},
		{"a hint may send another zone's endpoint here", Endpoints{ep(1, "n2", "b", zones("a", "b")), ep(2, "n3", "b", zones("b"))}, here, DistributeAuto, []byte{1}},
		{"no hint for this zone: all", Endpoints{ep(1, "n2", "b", zones("b")), ep(2, "n3", "c", zones("c"))}, here, DistributeAnywhere, []byte{1, 2}},
		{"one ready endpoint without hint: all", Endpoints{ep(1, "n2", "a", zones("a")), ep(2, "n3", "b", nil)}, here, DistributeAnywhere, []byte{1, 2}},
		{"an unready endpoint without hint does not count", Endpoints{ep(1, "n2", "a", zones("a")), ep(2, "n3", "b", zones("b")), terminating(ep(3, "n3", "b", nil))}, here, DistributeAnywhere, []byte{1}},
		{"node without zone: all", Endpoints{ep(1, "n2", "a", zones("a")), ep(2, "n3", "b", zones("b"))}, &Node{Name: "n1"}, DistributeAnywhere, []byte{1, 2}},
		{"no node object: all", Endpoints{ep(1, "n2", "a", zones("a")), ep(2, "n3", "b", zones("b"))}, nil, DistributeAnywhere, []byte{1, 2}},
		{"node hints: this node's", Endpoints{ep(1, "n1", "a", nodes("n1", "a")), ep(2, "n2", "a", nodes("n2", "a")), ep(3, "n3", "b", nodes("n3", "b"))}, here, DistributeSameNode, []byte{1}},
		{"node hints, none here: the zone's", Endpoints{ep(1, "n2", "a", nodes("n2", "a")), ep(2, "n3", "b", nodes("n3", "b"))}, here, DistributeSameNode, []byte{1}},
		{"node hints, none here nor in the zone: all", Endpoints{ep(1, "n2", "b", nodes("n2", "b")), ep(2, "n3", "c", nodes("n3", "c"))}, here, DistributeSameNode, []byte{1, 2}},
		{"no ready endpoint: terminating ones of any zone", Endpoints{terminating(ep(1, "n2", "a", zones("a"))), terminating(ep(2, "n3", "b", zones("b")))}, here, DistributeAnywhere, []byte{1, 2}},
		// Slices without hints: trafficDistribution hints as the
		// EndpointSlice controller would.
		{"PreferSameZone without hints: own zone", Endpoints{ep(1, "n2", "a", nil), ep(2, "n3", "b", nil), ep(3, "n4", "a", nil)}, here, DistributeSameZone, []byte{1, 3}},
		{"PreferSameZone without hints, none in zone: all", Endpoints{ep(1, "n2", "b", nil), ep(2, "n3", "c", nil)}, here, DistributeSameZone, []byte{1, 2}},
		{"PreferSameZone, an endpoint without zone: all", Endpoints{ep(1, "n2", "a", nil), ep(2, "n3", "", nil)}, here, DistributeSameZone, []byte{1, 2}},
		{"PreferSameNode without hints: own node", Endpoints{ep(1, "n1", "a", nil), ep(2, "n2", "a", nil)}, here, DistributeSameNode, []byte{1}},
		{"PreferSameNode without hints, none here: own zone", Endpoints{ep(1, "n2", "a", nil), ep(2, "n3", "b", nil)}, here, DistributeSameNode, []byte{1}},
		{"Auto without hints: all", Endpoints{ep(1, "n2", "a", nil), ep(2, "n3", "b", nil)}, here, DistributeAuto, []byte{1, 2}},
		{"the slices' hints win over trafficDistribution", Endpoints{ep(1, "n2", "a", zones("b")), ep(2, "n3", "b", zones("a"))}, here, DistributeSameZone, []byte{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			for _, e := range tc.eps.ClusterServing(true, tc.node, tc.dist) {
				got = append(got, e.Addr.As4()[3])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %v, want %v", got, tc.want)
			}
			if v6 := tc.eps.ClusterServing(false, tc.node, tc.dist); len(v6) != 0 {
				t.Errorf("IPv6 endpoints %v of IPv4 ones", v6)
			}
		})
	}
}

// TestTrafficDistributionFromAPI reads spec.trafficDistribution before the
// topology annotations, and unknown values as no preference.
func TestTrafficDistributionFromAPI(t *testing.T) {
	for _, tc := range []struct {
		td   string // "" for unset
		ann  map[string]string
		want TrafficDistribution
	}{
		{"", nil, DistributeAnywhere},
		{corev1.ServiceTrafficDistributionPreferClose, nil, DistributeSameZone},
		{corev1.ServiceTrafficDistributionPreferSameZone, nil, DistributeSameZone},
		{corev1.ServiceTrafficDistributionPreferSameNode, map[string]string{AnnotationTopologyMode: "Auto"}, DistributeSameNode},
		{"PreferSomewhereElse", nil, DistributeAnywhere},
		{"", map[string]string{AnnotationTopologyMode: "Auto"}, DistributeAuto},
		{"", map[string]string{AnnotationTopologyAwareHints: "auto"}, DistributeAuto},
		{"", map[string]string{AnnotationTopologyMode: "Disabled"}, DistributeAnywhere},
	} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: tc.ann},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 80}}}}
		if tc.td != "" {
			svc.Spec.TrafficDistribution = &tc.td
		}
		sps, err := ServicePortsFromAPI(svc)
		if err != nil || len(sps) != 1 || sps[0].TrafficDistribution != tc.want {
			t.Errorf("trafficDistribution %q, annotations %v: got %+v, %v; want %v", tc.td, tc.ann, sps, err, tc.want)
		}
	}
}
