package model

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodFromAPISkipsPodsThatAreNotPolicySubjects(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{"running pod with IP", func(*corev1.Pod) {}, true},
		{"hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, false},
		{"no IP yet", func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }, false},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, false},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false},
		{"terminating but running", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, true},
		{"only legacy podIP", func(p *corev1.Pod) { p.Status.PodIPs = nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.mutate(p)
			got, err := PodFromAPI(p)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.want {
				t.Fatalf("PodFromAPI = %+v, want present=%v", got, tc.want)
			}
		})
	}

	got, _ := PodFromAPI(base())
	if want := []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}; len(got.IPs) != 2 || got.IPs[0] != want[0] || got.IPs[1] != want[1] {
		t.Errorf("IPs = %v, want %v", got.IPs, want)
	}
	if port, ok := got.NamedPort("dns", UDP); !ok || port != 53 {
		t.Errorf("NamedPort(dns, udp) = %d, %v; want 53", port, ok)
	}
	if _, ok := got.NamedPort("dns", TCP); ok {
		t.Error("NamedPort(dns, tcp) resolved a UDP port")
	}

	bad := base()
	bad.Status.PodIPs = []corev1.PodIP{{IP: "not-an-ip"}}
	if _, err := PodFromAPI(bad); err == nil {
		t.Error("PodFromAPI accepted an invalid IP")
	}
}

func TestStatusConditionsDoNotChangeThePod(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5"},
	}
	before, _ := PodFromAPI(p)
	p2 := p.DeepCopy()
	p2.ResourceVersion = "2"
	p2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	after, _ := PodFromAPI(p2)
	if !before.Equal(after) {
		t.Errorf("condition change altered the pod: %+v -> %+v", before, after)
	}
}

func TestServicePortsFromAPISkipRules(t *testing.T) {
	svc := func(mutate func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00:96::10"},
				Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53}},
			},
		}
		mutate(s)
		return s
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Service)
		ports  int
	}{
		{"cluster IP", func(*corev1.Service) {}, 2},
		{"headless", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} }, 0},
		{"ExternalName", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ServiceTypeExternalName, "", nil
		}, 0},
		{"other proxy", func(s *corev1.Service) { s.Labels = map[string]string{LabelServiceProxyName: "other"} }, 0},
		{"no cluster IP yet", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports, err := ServicePortsFromAPI(svc(tc.mutate))
			if err != nil {
				t.Fatal(err)
			}
			if len(ports) != tc.ports {
				t.Fatalf("got %d ports, want %d", len(ports), tc.ports)
			}
		})
	}

	ports, _ := ServicePortsFromAPI(svc(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30053
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.ExternalIPs = []string{"192.0.2.1"}
		proxy := corev1.LoadBalancerIPModeProxy
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}, {Hostname: "lb.example"},
			{IP: "198.51.100.8", IPMode: &proxy}}
		s.Spec.LoadBalancerSourceRanges = []string{" 203.0.113.0/24", "bad", "192.0.2.0/25"}
		s.Annotations = map[string]string{AnnotationScheduler: "lc", AnnotationHairpin: "", "unrelated": "x"}
	}))
	p := ports[0]
	if p.Key != (ServicePortKey{"ns", "s", "dns", UDP}) || p.Port != 53 || p.NodePort != 30053 {
		t.Errorf("port = %+v", p)
	}
	if !p.ExternalTrafficLocal || p.HealthCheckNodePort != 32000 || p.AffinityTimeout != corev1.DefaultClientIPServiceAffinitySeconds {
		t.Errorf("traffic policy or affinity lost: %+v", p)
	}
	if len(p.ClusterIPs) != 2 || len(p.ExternalIPs) != 1 || len(p.LoadBalancerIPs) != 1 || p.LoadBalancerIPs[0].String() != "198.51.100.7" {
		t.Errorf("addresses = %v %v %v (an ipMode Proxy address is not ours)", p.ClusterIPs, p.ExternalIPs, p.LoadBalancerIPs)
	}
	if fmt.Sprint(p.LoadBalancerSourceRanges) != "[192.0.2.0/25 203.0.113.0/24]" {
		t.Errorf("source ranges = %v, want the two valid ones, sorted", p.LoadBalancerSourceRanges)
	}
	if p.Options != (ProxyOptions{Scheduler: "lc", Hairpin: true}) {
		t.Errorf("options = %+v", p.Options)
	}

	if _, err := ServicePortsFromAPI(svc(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"300.1.1.1"} })); err == nil {
		t.Error("an invalid external IP was accepted")
	}
}

func TestEndpointSliceFromAPISkipRules(t *testing.T) {
	slice := func(mutate func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "s-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "s"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To("n1")},
				{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}},
			},
		}
		mutate(s)
		return s
	}
	if EndpointSliceFromAPI(slice(func(s *discoveryv1.EndpointSlice) { s.Labels[LabelHeadless] = "" })) != nil {
		t.Error("headless slice converted")
	}
	if EndpointSliceFromAPI(slice(func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeFQDN })) != nil {
		t.Error("FQDN slice converted")
	}
	if EndpointSliceFromAPI(slice(func(s *discoveryv1.EndpointSlice) { delete(s.Labels, discoveryv1.LabelServiceName) })) != nil {
		t.Error("slice without a service converted")
	}
	got := EndpointSliceFromAPI(slice(func(*discoveryv1.EndpointSlice) {}))
	want := []SliceEndpoint{
		{Addr: netip.MustParseAddr("10.0.0.1"), Node: "n1", Conditions: EndpointConditions{Ready: true, Serving: true}},
		{Addr: netip.MustParseAddr("10.0.0.2"), Conditions: EndpointConditions{Serving: true, Terminating: true}},
	}
	if len(got.Endpoints) != 2 || got.Endpoints[0] != want[0] || got.Endpoints[1] != want[1] {
		t.Errorf("endpoints = %+v, want %+v", got.Endpoints, want)
	}
	if got.Ports[0] != (SlicePort{Name: "http", Protocol: TCP, Port: 8080}) {
		t.Errorf("port = %+v", got.Ports[0])
	}
}

func TestNodeFromAPIKeepsOnlyOurAnnotations(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"kube-router.io/node.asn": "64513", "other": "x"}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:244:1::/64"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}, {Type: corev1.NodeHostName, Address: "n1"},
		}},
	}
	got, err := NodeFromAPI(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 1 || len(got.PodCIDRs) != 2 || len(got.InternalIPs) != 1 {
		t.Errorf("node = %+v", got)
	}
	n2 := n.DeepCopy()
	n2.Annotations["other"] = "y"
	n2.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady}}
	got2, _ := NodeFromAPI(n2)
	if !got.Equal(got2) {
		t.Error("unrelated annotation or condition changed the node")
	}
	n2.Spec.PodCIDRs = []string{"10.244.1.0/33"}
	if _, err := NodeFromAPI(n2); err == nil {
		t.Error("invalid pod CIDR accepted")
	}
}
