package watch

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
)

// The scale of make bench-compare's 10k run: 10,000 ClusterIP services with
// one EndpointSlice of 10 endpoints each; and as many pods, for the firewall's
// side (the field report's churn).
const (
	scaleServices  = 10000
	scaleEndpoints = 10
	scalePods      = 10000
)

// managedFields is one managedFields entry of about the size the API server
// writes for a client's create.
func managedFields(manager string, size int) []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", FieldsType: "FieldsV1", Time: ptr.To(metav1.Now()),
		FieldsV1: metav1.NewFieldsV1(string(make([]byte, size)))}}
}

// scaleService is a ClusterIP service as the API server returns it: defaults
// filled in, uid, resourceVersion, creation time, managed fields.
func scaleService(i int) *corev1.Service {
	ip := fmt.Sprintf("10.96.%d.%d", i/256, i%256)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces), Name: fmt.Sprintf("s%05d", i),
			UID: "0d3f5b8e-1c2a-4e6f-9a7b-000000000000", ResourceVersion: strconv.Itoa(100000 + i),
			CreationTimestamp: metav1.Now(), ManagedFields: managedFields("benchcompare", 400),
		},
		Spec: corev1.ServiceSpec{
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
			ClusterIP:             ip,
			ClusterIPs:            []string{ip},
			Type:                  corev1.ServiceTypeClusterIP,
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
}

// scaleSlice is the one EndpointSlice of scaleService(i), as the endpoint
// slice controller writes it: owner reference, trigger time, node names and
// pod references.
func scaleSlice(i int) *discoveryv1.EndpointSlice {
	svc := fmt.Sprintf("s%05d", i)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces), Name: svc + "-x7k2p", GenerateName: svc + "-",
			UID: "7a1c9e2b-3d4f-4a5b-8c6d-000000000000", ResourceVersion: strconv.Itoa(200000 + i), Generation: 1,
			CreationTimestamp: metav1.Now(),
			Labels: map[string]string{discoveryv1.LabelServiceName: svc,
				discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations:     map[string]string{model.AnnotationTriggerTime: time.Now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc, UID: "0d3f5b8e-1c2a-4e6f-9a7b-000000000000", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields:   managedFields("kube-controller-manager", 1200),
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for e := range scaleEndpoints {
		n := i*scaleEndpoints + e
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 64+n/65536, n/256%256, n%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", n%20)),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: s.Namespace, Name: fmt.Sprintf("%s-5d8f7c9b6-%d", svc, e), UID: "6f1d3c9a-0000-4000-8000-000000000000"},
		})
	}
	return s
}

// BenchmarkInformerCacheBytes reports what the informer caches hold per
// object at 10,000 services × 10 endpoints, for each transform: the objects
// go through the transform into an indexer like the informers' (with the
// namespace index) and through the Feeder's event handler into the model,
// as a running agent's do. The cache's bytes are what deleting its objects
// frees (the model keeps what it shares; the map's own table stays); the
// model's are counted apart.
func BenchmarkInformerCacheBytes(b *testing.B) {
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
	}{
		{"slim", Slim},
		{"compact", Compact},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				measureCacheBytes(b, tc.transform)
			}
		})
	}
}

func measureCacheBytes(b *testing.B, transform cache.TransformFunc) {
	store := model.NewStore(nil)
	handler := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil).EventHandler()
	var modelBytes uint64
	for _, kind := range []struct {
		name, unit string
		n          int
		object     func(int) any
	}{
		// Services first: the model joins endpoints only to ports it has.
		{KindService, "B/svc", scaleServices, func(i int) any { return scaleService(i) }},
		{KindEndpointSlice, "B/slice", scaleServices, func(i int) any { return scaleSlice(i) }},
		{KindPod, "B/pod", scalePods, func(i int) any { return realisticPod(i) }},
	} {
		before := heapInUse()
		indexer := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for i := range kind.n {
			obj, err := transform(kind.object(i))
			if err != nil {
				b.Fatal(err)
			}
			if err := indexer.Add(obj); err != nil {
				b.Fatal(err)
			}
			handler.OnAdd(obj, true)
		}
		if got := len(indexer.ListKeys()); got != kind.n {
			b.Fatalf("%s cache holds %d objects, want %d", kind.name, got, kind.n)
		}
		filled := heapInUse()
		for _, k := range indexer.ListKeys() { // what the model holds stays
			if err := indexer.Delete(cache.ExplicitKey(k)); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		b.ReportMetric(float64(filled-after)/float64(kind.n), "cache-"+kind.unit)
		modelBytes += after - before
	}
	state, _ := store.Snapshot()
	if state.ServicePorts.Len() != scaleServices || state.Endpoints.Len() != scaleServices || state.Pods.Len() != scalePods {
		b.Fatalf("model holds %d service ports, %d endpoint lists, %d pods; want %d, %d, %d",
			state.ServicePorts.Len(), state.Endpoints.Len(), state.Pods.Len(), scaleServices, scaleServices, scalePods)
	}
	b.ReportMetric(float64(modelBytes)/(1<<20), "model-MiB")
}
