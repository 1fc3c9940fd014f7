package watch

import (
	"fmt"
	goruntime "runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
)

// The watch path at the scale of issue 2: 5,000 pods, 1,000 services with a
// slice of 5 endpoints each, 100 namespaces, 1,000 policies.
const (
	benchPods       = 5000
	benchServices   = 1000
	benchNamespaces = 100
	benchPolicies   = 1000
)

// realisticPod is a pod as the API server sends it: managed fields, kubectl
// annotations, two containers with env and mounts, volumes, conditions.
func realisticPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("ns-%d", i%benchNamespaces)
	ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)
	mf := metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(make([]byte, 1500)))}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example/app/" + name + ":v1.2.3",
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9100}},
			Env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "C", Value: "3"}, {Name: "D", Value: "4"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: fmt.Sprintf("app-%d", i), UID: "6f1d3c9a-0000-4000-8000-000000000000", ResourceVersion: "1",
			Labels:        map[string]string{"app": fmt.Sprintf("app-%d", i%benchServices), "pod-template-hash": "5d8f7c9b6"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z"},
			ManagedFields: []metav1.ManagedFieldsEntry{mf, mf},
		},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("node-%d", i%20),
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "token"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "192.168.0.1", PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example/app/app:v1.2.3", ImageID: "sha256:0123456789abcdef"}},
		},
	}
}

func benchService(i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces), Name: fmt.Sprintf("app-%d", i)},
		Spec: corev1.ServiceSpec{
			ClusterIP: fmt.Sprintf("10.96.%d.%d", i/256, i%256), Selector: map[string]string{"app": fmt.Sprintf("app-%d", i)},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
}

func benchSlice(i int, readyFirst bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces), Name: fmt.Sprintf("app-%d-x", i), Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("app-%d", i)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	for e := 0; e < 5; e++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.200.%d.%d", i%256, e+1)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", e)),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e != 0 || readyFirst)},
		})
	}
	return s
}

func benchPolicy(i int) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces), Name: fmt.Sprintf("np-%d", i)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}},
			}}},
		},
	}
}

// loadedFeeder returns a feeder whose store holds the whole benchmark cluster.
func loadedFeeder(b *testing.B) (*Feeder, *model.Store) {
	b.Helper()
	store := model.NewStore(nil)
	f := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil)
	for i := 0; i < benchNamespaces; i++ {
		f.Apply(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}})
	}
	for i := 0; i < benchPods; i++ {
		f.Apply(realisticPod(i))
	}
	for i := 0; i < benchServices; i++ {
		f.Apply(benchService(i))
		f.Apply(benchSlice(i, true))
	}
	for i := 0; i < benchPolicies; i++ {
		f.Apply(benchPolicy(i))
	}
	store.Snapshot()
	return f, store
}

// benchEvents feeds alternating versions of an object through the informer
// path — Compact, then the Feeder — and checks every event's result.
func benchEvents(b *testing.B, versions [2]*corev1.Pod, wantChanged bool) {
	f, store := loadedFeeder(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		obj, _ := Compact(versions[i%2])
		changed, err := f.Apply(obj.(runtime.Object))
		if err != nil || changed != (wantChanged && i > 0) && i > 0 {
			b.Fatalf("event %d: changed=%v err=%v, want changed=%v", i, changed, err, wantChanged)
		}
		if i%1000 == 999 {
			b.StopTimer()
			store.Snapshot() // as the Runner would; keeps pending changes bounded
			b.StartTimer()
		}
	}
}

// BenchmarkIgnoredPodEvent is a status-condition-only pod update: most of what
// a kubelet writes.
func BenchmarkIgnoredPodEvent(b *testing.B) {
	p := realisticPod(42)
	q := p.DeepCopy()
	q.ResourceVersion = "2"
	q.Status.Conditions[0].Status = corev1.ConditionFalse
	benchEvents(b, [2]*corev1.Pod{p, q}, false)
}

// BenchmarkRelevantPodEvent is a relabel of a pod, which the firewall reads.
func BenchmarkRelevantPodEvent(b *testing.B) {
	p := realisticPod(42)
	q := p.DeepCopy()
	q.Labels = map[string]string{"app": "app-42", "pod-template-hash": "5d8f7c9b6", "canary": "true"}
	benchEvents(b, [2]*corev1.Pod{p, q}, true)
}

// BenchmarkRelevantEndpointSliceEvent flips one endpoint's readiness.
func BenchmarkRelevantEndpointSliceEvent(b *testing.B) {
	f, store := loadedFeeder(b)
	versions := [2]*discoveryv1.EndpointSlice{benchSlice(7, false), benchSlice(7, true)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		obj, _ := Compact(versions[i%2])
		if changed, _ := f.Apply(obj.(runtime.Object)); !changed {
			b.Fatalf("event %d did not change the endpoints", i)
		}
		if i%1000 == 999 {
			b.StopTimer()
			store.Snapshot()
			b.StartTimer()
		}
	}
}

// BenchmarkCacheMemory reports the heap held by informer caches plus the
// model for the whole benchmark cluster, with each transform and with none.
func BenchmarkCacheMemory(b *testing.B) {
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"compact", Compact},
		{"slim", Slim},
		{"raw", func(o any) (any, error) { return o, nil }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var heap uint64
			for i := 0; i < b.N; i++ {
				before := heapInUse()
				caches, store := fillCaches(tc.transform)
				heap = heapInUse() - before
				goruntime.KeepAlive(caches)
				goruntime.KeepAlive(store)
			}
			b.ReportMetric(float64(heap)/(1<<20), "MiB")
		})
	}
}

func heapInUse() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fillCaches builds what a running agent holds: one informer store per kind,
// filled through the transform, and the model fed from the stored objects.
// The generated objects themselves are dropped, as decoded watch events are.
func fillCaches(transform func(any) (any, error)) (map[string]cache.Store, *model.Store) {
	caches := map[string]cache.Store{}
	store := model.NewStore(nil)
	f := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil)
	add := func(kind string, obj runtime.Object) {
		c := caches[kind]
		if c == nil {
			c = cache.NewStore(cache.MetaNamespaceKeyFunc)
			caches[kind] = c
		}
		slim, _ := transform(obj)
		c.Add(slim)
		f.Apply(slim.(runtime.Object))
	}
	for i := 0; i < benchNamespaces; i++ {
		add(KindNamespace, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}})
	}
	for i := 0; i < benchPods; i++ {
		add(KindPod, realisticPod(i))
	}
	for i := 0; i < benchServices; i++ {
		add(KindService, benchService(i))
		add(KindEndpointSlice, benchSlice(i, true))
	}
	for i := 0; i < benchPolicies; i++ {
		add(KindNetworkPolicy, benchPolicy(i))
	}
	return caches, store
}
