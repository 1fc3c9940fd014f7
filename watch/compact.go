package watch

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nfrouter/nfrouter/model"
)

// Compact is the informers' transform function. Pods, services and
// EndpointSlices, the kinds that number in the tens of thousands, are
// converted to their model values here and cached as such (see compact): the
// informer cache and the Store then share one copy, where they held a slimmed
// API object beside its conversion. An object that does not convert, and
// every other kind, is slimmed (Slim) and left to the Feeder as before, which
// reports it.
func Compact(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if p, err := model.PodFromAPI(o); err == nil {
			return newCompact(&o.ObjectMeta, p), nil
		}
	case *corev1.Service:
		if ports, err := model.ServicePortsFromAPI(o); err == nil {
			return newCompact(&o.ObjectMeta, ports), nil
		}
	case *discoveryv1.EndpointSlice:
		return newCompact(&o.ObjectMeta, model.EndpointSliceFromAPI(o)), nil
	}
	return Slim(obj)
}

// compact is a cached object reduced to what client-go and the Feeder read:
// the namespace and name it is keyed by, the resourceVersion an update is told
// from a resync by (an update of unchanged resourceVersion reaches only
// handlers that asked for resyncs), and the model's value, shared with the
// Store (nil when the model ignores the object, as it ignores headless
// services). Model values are never written to once made, so the sharing is
// safe, as for any informer object.
//
// compact implements metav1.Object for client-go's key and index functions
// (meta.Accessor); the metadata it does not keep reads as empty, and setting
// it does nothing.
type compact[V any] struct {
	namespace, name, resourceVersion string
	value                            V
}

func newCompact[V any](meta *metav1.ObjectMeta, value V) *compact[V] {
	return &compact[V]{namespace: meta.Namespace, name: meta.Name, resourceVersion: meta.ResourceVersion, value: value}
}

// GetObjectKind implements runtime.Object; the kind is the type parameter's.
func (c *compact[V]) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. The model value is shared, not
// copied: nothing writes to it.
func (c *compact[V]) DeepCopyObject() runtime.Object {
	out := *c
	return &out
}

func (c *compact[V]) GetNamespace() string               { return c.namespace }
func (c *compact[V]) SetNamespace(namespace string)      { c.namespace = namespace }
func (c *compact[V]) GetName() string                    { return c.name }
func (c *compact[V]) SetName(name string)                { c.name = name }
func (c *compact[V]) GetResourceVersion() string         { return c.resourceVersion }
func (c *compact[V]) SetResourceVersion(version string)  { c.resourceVersion = version }
func (c *compact[V]) GetGenerateName() string            { return "" }
func (c *compact[V]) SetGenerateName(string)             {}
func (c *compact[V]) GetUID() types.UID                  { return "" }
func (c *compact[V]) SetUID(types.UID)                   {}
func (c *compact[V]) GetGeneration() int64               { return 0 }
func (c *compact[V]) SetGeneration(int64)                {}
func (c *compact[V]) GetSelfLink() string                { return "" }
func (c *compact[V]) SetSelfLink(string)                 {}
func (c *compact[V]) GetCreationTimestamp() metav1.Time  { return metav1.Time{} }
func (c *compact[V]) SetCreationTimestamp(metav1.Time)   {}
func (c *compact[V]) GetDeletionTimestamp() *metav1.Time { return nil }
func (c *compact[V]) SetDeletionTimestamp(*metav1.Time)  {}
func (c *compact[V]) GetDeletionGracePeriodSeconds() *int64 {
	return nil
}
func (c *compact[V]) SetDeletionGracePeriodSeconds(*int64)          {}
func (c *compact[V]) GetLabels() map[string]string                  { return nil }
func (c *compact[V]) SetLabels(map[string]string)                   {}
func (c *compact[V]) GetAnnotations() map[string]string             { return nil }
func (c *compact[V]) SetAnnotations(map[string]string)              {}
func (c *compact[V]) GetFinalizers() []string                       { return nil }
func (c *compact[V]) SetFinalizers([]string)                        {}
func (c *compact[V]) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (c *compact[V]) SetOwnerReferences([]metav1.OwnerReference)    {}
func (c *compact[V]) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (c *compact[V]) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// The object types compact is instantiated with, one per kind.
type (
	compactPod           = compact[*model.Pod]
	compactService       = compact[[]*model.ServicePort]
	compactEndpointSlice = compact[*model.EndpointSlice]
)

var (
	_ metav1.Object  = (*compactPod)(nil)
	_ runtime.Object = (*compactPod)(nil)
)
