package watch

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nfrouter/nfrouter/model"
)

// Slim is the informers' transform function: it replaces each object with a
// copy holding only what the model reads, before the object enters the cache.
// Objects of other types (tombstones) pass through unchanged.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slimPod(o), nil
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: slimMeta(o.ObjectMeta)}, nil
	case *networkingv1.NetworkPolicy:
		return &networkingv1.NetworkPolicy{ObjectMeta: slimMeta(o.ObjectMeta), Spec: o.Spec}, nil
	case *corev1.Service:
		return &corev1.Service{ObjectMeta: slimMeta(o.ObjectMeta), Spec: o.Spec, Status: o.Status}, nil
	case *discoveryv1.EndpointSlice:
		return slimEndpointSlice(o), nil
	case *corev1.Node:
		return slimNode(o), nil
	}
	return obj, nil
}

// slimMeta keeps identity, labels and our own annotations. ResourceVersion
// stays: the informer's store needs it.
func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Labels:            m.Labels,
		DeletionTimestamp: m.DeletionTimestamp,
	}
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, model.AnnotationPrefix) {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string)
			}
			out.Annotations[k] = v
		}
	}
	return out
}

func slimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: slimMeta(p.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName:    p.Spec.NodeName,
			HostNetwork: p.Spec.HostNetwork,
		},
		Status: corev1.PodStatus{
			Phase:  p.Status.Phase,
			PodIP:  p.Status.PodIP,
			PodIPs: p.Status.PodIPs,
		},
	}
	for _, c := range p.Spec.Containers {
		if len(c.Ports) > 0 {
			out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
		}
	}
	return out
}

func slimEndpointSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		ObjectMeta:  slimMeta(s.ObjectMeta),
		AddressType: s.AddressType,
		Ports:       s.Ports,
		Endpoints:   make([]discoveryv1.Endpoint, len(s.Endpoints)),
	}
	for i, e := range s.Endpoints {
		out.Endpoints[i] = discoveryv1.Endpoint{
			Addresses:  e.Addresses,
			Conditions: e.Conditions,
			NodeName:   e.NodeName,
			Zone:       e.Zone,
		}
	}
	return out
}

func slimNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: slimMeta(n.ObjectMeta),
		Spec:       corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}
}
