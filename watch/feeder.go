package watch

import (
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/nfrouter/nfrouter/model"
)

// Feeder converts Kubernetes objects into model values and writes them into a
// Store, counting each event by kind and result and calling notify when the
// model changed. Informers and the manifests loader both feed through it.
type Feeder struct {
	store   *model.Store
	notify  func()
	log     *slog.Logger
	metrics *Metrics
	events  record.EventRecorder
}

// NewFeeder returns a feeder for store; notify is called after every change
// (Runner.Notify), and may be nil. Objects that cannot be converted get a
// Warning Event through events, which may be nil.
func NewFeeder(store *model.Store, notify func(), log *slog.Logger, m *Metrics, events record.EventRecorder) *Feeder {
	if notify == nil {
		notify = func() {}
	}
	return &Feeder{store: store, notify: notify, log: log, metrics: m, events: events}
}

// Kinds are the object kinds a Feeder takes, as named in metrics and logs.
const (
	KindPod           = "Pod"
	KindNamespace     = "Namespace"
	KindNetworkPolicy = "NetworkPolicy"
	KindService       = "Service"
	KindEndpointSlice = "EndpointSlice"
	KindNode          = "Node"
)

// ErrUnsupportedKind is returned for objects of a kind the model does not read.
var ErrUnsupportedKind = errors.New("unsupported kind")

// Apply takes an added or updated object. It returns whether the model changed.
// An object that cannot be converted leaves the model as it was and returns an
// error naming the object; a NetworkPolicy that fails to compile is still
// applied (it fails closed) and also returns its error.
func (f *Feeder) Apply(obj runtime.Object) (bool, error) {
	kind, changed, err := f.apply(obj, false)
	return f.count(kind, changed, err)
}

// Delete takes a deleted object, or a cache.DeletedFinalStateUnknown
// tombstone. It returns whether the model changed.
func (f *Feeder) Delete(obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return false
	}
	kind, changed, err := f.apply(ro, true)
	changed, _ = f.count(kind, changed, err)
	return changed
}

func (f *Feeder) count(kind string, changed bool, err error) (bool, error) {
	result := resultIgnored
	switch {
	case err != nil && !changed:
		result = resultInvalid
	case changed:
		result = resultChanged
	}
	if kind != "" {
		f.metrics.events.WithLabelValues(kind, result).Inc()
	}
	if changed {
		f.notify()
	}
	return changed, err
}

// apply converts obj and writes it into the store, or removes it when deleted.
func (f *Feeder) apply(obj runtime.Object, deleted bool) (kind string, changed bool, err error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		key := model.PodKey{Namespace: o.Namespace, Name: o.Name}
		var p *model.Pod
		if !deleted {
			if p, err = model.PodFromAPI(o); err != nil {
				return KindPod, false, err
			}
		}
		return KindPod, f.store.SetPod(key, p), nil

	case *corev1.Namespace:
		var ns *model.Namespace
		if !deleted {
			ns = model.NamespaceFromAPI(o)
		}
		return KindNamespace, f.store.SetNamespace(o.Name, ns), nil

	case *networkingv1.NetworkPolicy:
		key := model.PolicyKey{Namespace: o.Namespace, Name: o.Name}
		var p *model.Policy
		if !deleted {
			p = model.PolicyFromAPI(o)
			if p.Err != "" {
				err = fmt.Errorf("NetworkPolicy %s fails closed: %s", key, p.Err)
			}
		}
		return KindNetworkPolicy, f.store.SetPolicy(key, p), err

	case *corev1.Service:
		key := model.ServiceKey{Namespace: o.Namespace, Name: o.Name}
		var ports []*model.ServicePort
		if !deleted {
			if ports, err = model.ServicePortsFromAPI(o); err != nil {
				return KindService, false, err
			}
		}
		return KindService, f.store.SetService(key, ports), nil

	case *discoveryv1.EndpointSlice:
		key := model.SliceKey{Namespace: o.Namespace, Name: o.Name}
		var s *model.EndpointSlice
		if !deleted {
			s = model.EndpointSliceFromAPI(o)
		}
		return KindEndpointSlice, f.store.SetEndpointSlice(key, s), nil

	// Objects the informers cached already converted (Compact).
	case *compactPod:
		return KindPod, f.store.SetPod(model.PodKey{Namespace: o.namespace, Name: o.name}, unlessDeleted(o.value, deleted)), nil
	case *compactService:
		return KindService, f.store.SetService(model.ServiceKey{Namespace: o.namespace, Name: o.name}, unlessDeleted(o.value, deleted)), nil
	case *compactEndpointSlice:
		return KindEndpointSlice, f.store.SetEndpointSlice(model.SliceKey{Namespace: o.namespace, Name: o.name}, unlessDeleted(o.value, deleted)), nil

	case *corev1.Node:
		var n *model.Node
		if !deleted {
			if n, err = model.NodeFromAPI(o); err != nil {
				return KindNode, false, err
			}
		}
		return KindNode, f.store.SetNode(o.Name, n), nil
	}
	return "", false, fmt.Errorf("%w %T", ErrUnsupportedKind, obj)
}

// unlessDeleted is v, or the zero value (which removes) for a deleted object.
func unlessDeleted[V any](v V, deleted bool) V {
	if deleted {
		var none V
		return none
	}
	return v
}

// EventHandler returns informer callbacks that feed f. An object that cannot
// be converted is logged and gets a Warning Event; the model keeps what it
// had. (A NetworkPolicy that fails closed is reported by the firewall.)
func (f *Feeder) EventHandler() cache.ResourceEventHandler {
	apply := func(obj any) {
		ro, ok := obj.(runtime.Object)
		if !ok {
			return
		}
		changed, err := f.Apply(ro)
		if err == nil || changed {
			return
		}
		f.log.Warn("Ignoring invalid object; keeping what was programmed for it", "error", err)
		if f.events != nil {
			f.events.Event(ro, corev1.EventTypeWarning, "InvalidObject", "nfrouter ignores this object: "+err.Error())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    apply,
		UpdateFunc: func(_, obj any) { apply(obj) },
		DeleteFunc: func(obj any) { f.Delete(obj) },
	}
}
