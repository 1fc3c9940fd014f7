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
// Every node watches every pod, service and EndpointSlice, so the informers'
// transform (Compact, compact.go) converts these to their model values before
// they reach the informer cache, which keeps only the value, shared with the
// model's Store, plus namespace, name and resourceVersion: at 10,000 services
// × 10 endpoints about 200 bytes per object instead of 0.9 KiB per service
// and 2.7 KiB per EndpointSlice (BenchmarkInformerCacheBytes). Objects that
// do not convert, and the other kinds, are cached slimmed to the fields the
// model reads (Slim, transform.go): managedFields, annotations we do not read
// and node status beyond addresses are dropped.
package watch
