package watch

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nfrouter/nfrouter/model"
)

// Slim strips each object down to what the model reads before the object
// enters the informer cache; the informers' transform, Compact, uses it for
// the kinds it does not convert and for objects that fail to convert. It works in place,
// as client-go allows for transform functions (the object is freshly decoded
// and not yet shared), so that an event costs no copy (except an
// EndpointSlice's endpoints, re-packed smaller). Objects of other types
// (tombstones) pass through unchanged.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		slimPod(o)
	case *corev1.Namespace:
		*o = corev1.Namespace{ObjectMeta: slimMeta(o.ObjectMeta)}
	case *networkingv1.NetworkPolicy:
		*o = networkingv1.NetworkPolicy{ObjectMeta: slimMeta(o.ObjectMeta), Spec: o.Spec}
	case *corev1.Service:
		meta := slimMeta(o.ObjectMeta)
		// The topology-mode annotation asks for topology-aware routing.
		keepAnnotations(&meta, o.Annotations, model.AnnotationTopologyMode, model.AnnotationTopologyAwareHints)
		*o = corev1.Service{ObjectMeta: meta, Spec: o.Spec, Status: o.Status}
	case *discoveryv1.EndpointSlice:
		slimEndpointSlice(o)
	case *corev1.Node:
		*o = corev1.Node{
			ObjectMeta: slimMeta(o.ObjectMeta),
			Spec:       corev1.NodeSpec{PodCIDR: o.Spec.PodCIDR, PodCIDRs: o.Spec.PodCIDRs},
			Status:     corev1.NodeStatus{Addresses: o.Status.Addresses},
		}
	}
	return obj, nil
}

// slimMeta keeps identity, labels and our own annotations. ResourceVersion
// stays: the informer's store needs it.
func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Labels:            m.Labels,
		Annotations:       model.KubeRouterAnnotations(m.Annotations),
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

func slimPod(p *corev1.Pod) {
	containers := p.Spec.Containers[:0]
	for _, c := range p.Spec.Containers {
		if len(c.Ports) > 0 {
			containers = append(containers, corev1.Container{Name: c.Name, Ports: c.Ports})
		}
	}
	clear(p.Spec.Containers[len(containers):]) // release what the dropped tail held
	*p = corev1.Pod{
		ObjectMeta: slimMeta(p.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName:    p.Spec.NodeName,
			HostNetwork: p.Spec.HostNetwork,
			Containers:  containers,
		},
		Status: corev1.PodStatus{
			Phase:  p.Status.Phase,
			PodIP:  p.Status.PodIP,
			PodIPs: p.Status.PodIPs,
		},
	}
}

// slimEndpointSlice keeps what the model reads, in an array of exactly the
// endpoints' number (the decoder's appends leave up to half unused) and with
// the conditions pointing at shared values: at 10,000 services × 10
// endpoints, these caches are among the agent's largest.
func slimEndpointSlice(s *discoveryv1.EndpointSlice) {
	eps := make([]discoveryv1.Endpoint, len(s.Endpoints))
	for i, e := range s.Endpoints {
		eps[i] = discoveryv1.Endpoint{
			Addresses: e.Addresses,
			Conditions: discoveryv1.EndpointConditions{
				Ready:       sharedBool(e.Conditions.Ready),
				Serving:     sharedBool(e.Conditions.Serving),
				Terminating: sharedBool(e.Conditions.Terminating),
			},
			NodeName: e.NodeName,
			Zone:     e.Zone,
			Hints:    e.Hints, // topology-aware routing
		}
	}
	s.Endpoints = eps
	meta := slimMeta(s.ObjectMeta)
	// The trigger time measures network programming latency; kept as an
	// annotation so that the model converts it like the rest.
	keepAnnotations(&meta, s.Annotations, model.AnnotationTriggerTime)
	*s = discoveryv1.EndpointSlice{
		ObjectMeta:  meta,
		AddressType: s.AddressType,
		Ports:       s.Ports,
		Endpoints:   s.Endpoints,
	}
}

// keepAnnotations copies the named annotations of from into the slimmed
// meta's, which may be shared with nothing else once cloned.
func keepAnnotations(meta *metav1.ObjectMeta, from map[string]string, names ...string) {
	cloned := false
	for _, name := range names {
		v, ok := from[name]
		if !ok {
			continue
		}
		if !cloned {
			meta.Annotations = maps.Clone(meta.Annotations)
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			cloned = true
		}
		meta.Annotations[name] = v
	}
}

// Shared condition values: cached objects are never written to (client-go's
// rule), so every endpoint's "true" may be the same one.
var sharedTrue, sharedFalse = true, false

func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &sharedTrue
	default:
		return &sharedFalse
	}
}
