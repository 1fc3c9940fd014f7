package watch

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
)

// TestSlimKeepsTriggerTime checks that an EndpointSlice keeps its
// last-change-trigger-time through the transform, and that the model reads
// it: network programming latency is measured from it.
func TestSlimKeepsTriggerTime(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
			Annotations: map[string]string{model.AnnotationTriggerTime: "2026-12-01T10:00:00.5Z",
				"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if _, err := Slim(s); err != nil {
		t.Fatal(err)
	}
	if len(s.Annotations) != 1 {
		t.Errorf("annotations after Slim: %v, want the trigger time only", s.Annotations)
	}
	want := time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.UTC)
	if got := model.EndpointSliceFromAPI(s).TriggerTime; !got.Equal(want) {
		t.Errorf("trigger time %v, want %v", got, want)
	}
}

// TestSlimKeepsTopology checks that what topology-aware routing reads
// survives the transform: the endpoints' hints, the node's zone label and the
// service's trafficDistribution and topology-mode annotation.
func TestSlimKeepsTopology(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Zone: ptr.To("a"),
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}}, ForNodes: []discoveryv1.ForNode{{Name: "n1"}}}}},
	}
	if _, err := Slim(s); err != nil {
		t.Fatal(err)
	}
	got := model.EndpointSliceFromAPI(s).Endpoints[0].Hints
	if got == nil || !slices.Equal(got.ForZones, []string{"a"}) || !slices.Equal(got.ForNodes, []string{"n1"}) {
		t.Errorf("hints after Slim: %+v, want zone a and node n1", got)
	}

	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "a"}}}
	if _, err := Slim(n); err != nil {
		t.Fatal(err)
	}
	if mn, err := model.NodeFromAPI(n); err != nil || mn.Zone != "a" {
		t.Errorf("node after Slim: %+v, %v; want zone a", mn, err)
	}

	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{model.AnnotationTopologyMode: "Auto", "other": "x"}},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 80}}, TrafficDistribution: ptr.To(corev1.ServiceTrafficDistributionPreferClose)}},
	} {
		want := model.DistributeAuto
		if svc.Spec.TrafficDistribution != nil {
			want = model.DistributeSameZone
		}
		if _, err := Slim(svc); err != nil {
			t.Fatal(err)
		}
		if _, ok := svc.Annotations["other"]; ok {
			t.Errorf("Slim kept an unrelated annotation: %v", svc.Annotations)
		}
		sps, err := model.ServicePortsFromAPI(svc)
		if err != nil || len(sps) != 1 || sps[0].TrafficDistribution != want {
			t.Errorf("service after Slim: %+v, %v; want distribution %v", sps, err, want)
		}
	}
}
