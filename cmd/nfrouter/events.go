package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nfrouter/nfrouter/model"
)

// eventRecorder publishes the backends' Kubernetes Events (a policy that fails
// closed, an invalid annotation) through client-go's broadcaster, which
// aggregates and rate-limits them.
type eventRecorder struct {
	recorder record.EventRecorder
}

// newEventRecorder starts a broadcaster that stops when ctx is done.
func newEventRecorder(ctx context.Context, client kubernetes.Interface, nodeName string) *eventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return &eventRecorder{recorder: b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "nfrouter", Host: nodeName})}
}

// PolicyEvent implements nft.EventRecorder.
func (r *eventRecorder) PolicyEvent(p model.PolicyKey, eventType, reason, message string) {
	ref := &corev1.ObjectReference{Kind: "NetworkPolicy", APIVersion: "networking.k8s.io/v1", Namespace: p.Namespace, Name: p.Name}
	r.recorder.Event(ref, eventType, reason, message)
}

// ServiceEvent implements ipvs.EventRecorder.
func (r *eventRecorder) ServiceEvent(s model.ServiceKey, eventType, reason, message string) {
	ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: s.Namespace, Name: s.Name}
	r.recorder.Event(ref, eventType, reason, message)
}

// NodeEvent implements bgp.EventRecorder.
func (r *eventRecorder) NodeEvent(node, eventType, reason, message string) {
	// Node events are recorded against the node's name as UID, as the kubelet does.
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
	r.recorder.Event(ref, eventType, reason, message)
}
