package watch

import (
	"context"
	"maps"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
)

// compactCases are objects of the kinds Compact converts, with every field
// the model reads set somewhere, and the ones it skips or rejects.
func compactCases() []runtime.Object {
	mf := []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	meta := func(name string, annotations map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "u", ResourceVersion: "5",
			Labels: map[string]string{"app": name}, Annotations: annotations, ManagedFields: mf}
	}
	full := &corev1.Service{
		ObjectMeta: meta("full", map[string]string{
			model.AnnotationScheduler: "mh", model.AnnotationSchedFlags: "flag-1", model.AnnotationLocal: "true",
			model.AnnotationHairpin: "", model.AnnotationDSR: "tunnel", model.AnnotationAdvertiseClusterIP: "false",
			model.AnnotationAdvertiseExternalIP: "true", model.AnnotationAdvertiseLoadBalancerIP: "true",
			model.AnnotationTopologyMode: "Auto", "unrelated": "x"}),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00::10"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080},
				{Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}},
			ExternalIPs:              []string{"192.0.2.1"},
			LoadBalancerSourceRanges: []string{"198.51.100.0/24", " 203.0.113.0/24"},
			SessionAffinity:          corev1.ServiceAffinityClientIP,
			SessionAffinityConfig:    &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}},
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 32000,
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
			TrafficDistribution:   ptr.To(corev1.ServiceTrafficDistributionPreferClose),
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "192.0.2.2"}, {IP: "192.0.2.3", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)}}}},
	}
	plain := &corev1.Service{ObjectMeta: meta("plain", nil),
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.11", Ports: []corev1.ServicePort{{Port: 8080}}}}
	headless := plain.DeepCopy()
	headless.Name, headless.Spec.ClusterIP = "headless", corev1.ClusterIPNone
	external := &corev1.Service{ObjectMeta: meta("external", nil),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}}
	other := plain.DeepCopy()
	other.Name, other.Labels = "other", map[string]string{model.LabelServiceProxyName: "elsewhere"}
	unallocated := plain.DeepCopy()
	unallocated.Name, unallocated.Spec.ClusterIP = "unallocated", ""
	invalid := plain.DeepCopy()
	invalid.Name, invalid.Spec.ExternalIPs = "invalid", []string{"300.0.0.1"}

	slice := func(name, svc string, at discoveryv1.AddressType, labels map[string]string) *discoveryv1.EndpointSlice {
		m := meta(name, map[string]string{model.AnnotationTriggerTime: "2026-12-01T10:00:00.5Z", "unrelated": "x"})
		m.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
		for k, v := range labels {
			m.Labels[k] = v
		}
		return &discoveryv1.EndpointSlice{ObjectMeta: m, AddressType: at,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)},
				{Name: ptr.To("dns"), Port: ptr.To[int32](5353), Protocol: ptr.To(corev1.ProtocolUDP)},
				{Port: ptr.To[int32](9000)}, {Name: ptr.To("none")}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1", "10.0.0.9"}, NodeName: ptr.To("n1"), Zone: ptr.To("a"),
					Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}}, ForNodes: []discoveryv1.ForNode{{Name: "n1"}}}},
				{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{
					Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}},
				{Addresses: []string{"::ffff:10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"not-an-ip"}}, {},
			},
		}
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: meta(name, map[string]string{"unrelated": "x"}),
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
				{Name: "app", Image: "i", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
				{Name: "sidecar", Image: "i"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.1", PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}, {IP: "fd01::1"}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	hostNet, noIP, done, badIP := pod("host"), pod("no-ip"), pod("done"), pod("bad-ip")
	hostNet.Spec.HostNetwork = true
	noIP.Status.PodIP, noIP.Status.PodIPs = "", nil
	done.Status.Phase = corev1.PodSucceeded
	badIP.Status.PodIP, badIP.Status.PodIPs = "10.1.0.300", nil

	return []runtime.Object{
		full, plain, headless, external, other, unallocated, invalid,
		slice("full-a", "full", discoveryv1.AddressTypeIPv4, nil),
		slice("full-b", "full", discoveryv1.AddressTypeIPv4, nil),
		slice("plain-a", "plain", discoveryv1.AddressTypeIPv4, nil),
		slice("fqdn", "plain", discoveryv1.AddressTypeFQDN, nil),
		slice("headless-a", "headless", discoveryv1.AddressTypeIPv4, map[string]string{model.LabelHeadless: ""}),
		slice("orphan", "", discoveryv1.AddressTypeIPv4, nil),
		pod("web"), hostNet, noIP, done, badIP,
	}
}

// feedThrough feeds copies of objs to a new Feeder's event handler through
// transform, as an informer would, and returns the store and metrics.
func feedThrough(transform cache.TransformFunc, objs []runtime.Object) (*model.Store, *Metrics, cache.ResourceEventHandler) {
	store := model.NewStore(nil)
	metrics := NewMetrics(nil)
	h := NewFeeder(store, nil, discardLogger(), metrics, nil).EventHandler()
	for _, o := range objs {
		t, _ := transform(o.DeepCopyObject())
		h.OnAdd(t, true)
	}
	return store, metrics, h
}

// TestCompactFeedsTheModelAsSlimDid checks that caching converted values
// changes nothing the model sees: every field the model reads survives
// Compact, and objects the model skips or rejects count as before.
func TestCompactFeedsTheModelAsSlimDid(t *testing.T) {
	objs := compactCases()
	slimStore, slimMetrics, slimH := feedThrough(Slim, objs)
	compactStore, compactMetrics, compactH := feedThrough(Compact, objs)
	compare := func(phase string) {
		t.Helper()
		want, _ := slimStore.Snapshot()
		got, _ := compactStore.Snapshot()
		if g, w := stateContents(got), stateContents(want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: model fed through Compact differs from Slim's:\n got %+v\nwant %+v", phase, g, w)
		}
		for _, kind := range []string{KindService, KindEndpointSlice, KindPod} {
			for _, result := range []string{resultChanged, resultIgnored, resultInvalid} {
				if g, w := eventCount(compactMetrics, kind, result), eventCount(slimMetrics, kind, result); g != w {
					t.Errorf("%s: %s events %s: %d, want %d", phase, kind, result, g, w)
				}
			}
		}
	}
	compare("add")
	state, _ := compactStore.Snapshot()
	if state.ServicePorts.Len() != 3 || state.Endpoints.Len() != 3 || state.Pods.Len() != 1 {
		t.Fatalf("the cases reach too little of the model: %d service ports, %d endpoint lists, %d pods",
			state.ServicePorts.Len(), state.Endpoints.Len(), state.Pods.Len())
	}
	if got := eventCount(compactMetrics, KindService, resultInvalid) + eventCount(compactMetrics, KindPod, resultInvalid); got != 2 {
		t.Errorf("invalid events %d, want 2 (a service and a pod)", got)
	}

	// Updates and deletes: every object's second half goes away, the
	// first half's slices lose an endpoint.
	for i, o := range objs {
		var next runtime.Object
		if s, ok := o.(*discoveryv1.EndpointSlice); ok && i%2 == 0 {
			s = s.DeepCopy()
			s.ResourceVersion = "6"
			s.Endpoints = s.Endpoints[1:]
			next = s
		}
		for _, p := range []struct {
			transform cache.TransformFunc
			h         cache.ResourceEventHandler
		}{{Slim, slimH}, {Compact, compactH}} {
			old, _ := p.transform(o.DeepCopyObject())
			switch {
			case next != nil:
				updated, _ := p.transform(next.DeepCopyObject())
				p.h.OnUpdate(old, updated)
			case i%2 == 1:
				p.h.OnDelete(old)
			}
		}
	}
	compare("update and delete")
}

// TestCompactObjectsDeleteThroughTombstones checks what client-go does with a
// cached compact object: keys it by namespace and name, tells updates from
// resyncs by resourceVersion, and hands it back inside a
// DeletedFinalStateUnknown after a missed delete, which must remove it.
func TestCompactObjectsDeleteThroughTombstones(t *testing.T) {
	store := model.NewStore(nil)
	h := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil).EventHandler()
	var cached []any
	for _, o := range compactCases() {
		c, _ := Compact(o)
		switch c.(type) {
		case *compactPod, *compactService, *compactEndpointSlice:
		default:
			continue // slimmed: no conversion
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(c)
		if want := "ns/" + o.(metav1.Object).GetName(); err != nil || key != want {
			t.Errorf("key of %T %s: %q, %v; want %q", c, want, key, err, want)
		}
		if m, err := meta.Accessor(c); err != nil {
			t.Errorf("%T %s is no metav1.Object: %v", c, key, err)
		} else if rv := m.GetResourceVersion(); rv != "5" {
			t.Errorf("resourceVersion of %T %s: %q, want 5", c, key, rv)
		}
		h.OnAdd(c, true)
		cached = append(cached, c)
	}
	if len(cached) < 10 {
		t.Fatalf("only %d of the cases were compacted", len(cached))
	}
	if state, _ := store.Snapshot(); state.ServicePorts.Len() == 0 || state.Endpoints.Len() == 0 || state.Pods.Len() == 0 {
		t.Fatal("the compact objects fed nothing")
	}
	for _, c := range cached {
		key, _ := cache.MetaNamespaceKeyFunc(c)
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: c})
	}
	state, _ := store.Snapshot()
	if state.ServicePorts.Len()+state.Endpoints.Len()+state.Pods.Len() != 0 {
		t.Errorf("tombstones left %d service ports, %d endpoint lists, %d pods",
			state.ServicePorts.Len(), state.Endpoints.Len(), state.Pods.Len())
	}
}

// TestCompactThroughInformers runs the informers against a fake API server:
// added, updated and deleted services and slices reach the model.
func TestCompactThroughInformers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-x", ResourceVersion: "1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
	}
	client := fake.NewClientset(svc, slice)
	store := model.NewStore(nil)
	if err := StartInformers(ctx, client, NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil), 10*time.Second, discardLogger()); err != nil {
		t.Fatal(err)
	}
	key := model.ServicePortKey{Namespace: "ns", Name: "web", Port: "http", Protocol: model.TCP}
	endpoints := func() []string {
		state, _ := store.Snapshot()
		var out []string
		for _, e := range state.Endpoints.Get(key) {
			out = append(out, e.Addr.String())
		}
		return out
	}
	if got := endpoints(); !reflect.DeepEqual(got, []string{"10.0.0.1"}) {
		t.Fatalf("endpoints after sync: %v", got)
	}

	slice = slice.DeepCopy()
	slice.ResourceVersion = "2"
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update to reach the model", func() bool { return len(endpoints()) == 2 })

	if err := client.DiscoveryV1().EndpointSlices("ns").Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slice's delete to reach the model", func() bool { return len(endpoints()) == 0 })
	if err := client.CoreV1().Services("ns").Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service's delete to reach the model", func() bool {
		state, _ := store.Snapshot()
		return state.ServicePorts.Len() == 0
	})
}

// stateContents is what a State holds, as plain maps: two States built apart
// shard their maps differently.
func stateContents(s *model.State) []any {
	return []any{maps.Collect(s.Pods.All()), maps.Collect(s.Namespaces.All()), maps.Collect(s.Policies.All()),
		maps.Collect(s.ServicePorts.All()), maps.Collect(s.Endpoints.All()), maps.Collect(s.Nodes.All())}
}
