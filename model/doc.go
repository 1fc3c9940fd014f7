// Package model is nfrouter's picture of the cluster: the few facts about pods,
// namespaces, network policies, services, endpoints and nodes that the firewall,
// the service proxy and the router program into the kernel.
//
// # Values
//
// Every object is an immutable value built by a pure conversion from its
// Kubernetes type (PodFromAPI, ServicePortsFromAPI, …). A conversion returns nil
// for an object that nfrouter does not act on (a hostNetwork pod, a headless
// service), so such objects never reach a backend. Objects are compared with Equal;
// an event whose converted value equals what the model holds is dropped.
//
// # Store and State
//
// Store is the one mutable holder. Watchers write converted values into it, and
// each sync takes a Snapshot: a State, which nobody mutates afterwards, and the
// Changes since the previous snapshot, keyed per kind, so a backend can do work
// proportional to what changed. Snapshots are copy-on-write per kind, so a kind
// that did not change costs nothing to snapshot.
//
// # Topology
//
// EndpointSlice hints, the node's zone label and a service's
// trafficDistribution (or topology-mode annotation) come through, and
// Endpoints.ClusterServing applies kube-proxy's rules to them
// (topology.go), so that both proxy modes choose alike.
//
// This package imports the Kubernetes API types for conversion only; it imports
// neither client-go nor anything that talks to the kernel.
package model
