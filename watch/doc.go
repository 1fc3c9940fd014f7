// Package watch decides whether anything needs to happen. It turns Kubernetes
// objects — from shared informers or from manifest files — into model values,
// drops every event that changes no model key, and wakes the backends through a
// coalescing Runner.
//
// # Why events are filtered here
//
// kube-router resynced everything on every pod event. Here an event costs a
// conversion and a comparison; only a change of something a backend programs
// (a pod's IPs or labels, an endpoint's readiness, a policy) reaches the store,
// and only a store change wakes the Runner. A pod whose status conditions flip,
// a headless service's EndpointSlice, or a node heartbeat ends in the
// "ignored" counter.
//
// # Memory
//
// Every node watches every pod, so informers keep only the fields the model
// reads (see transform.go): managedFields, annotations we do not read, pod
// specs beyond container ports and node status beyond addresses are dropped
// before the object reaches the informer cache.
package watch
