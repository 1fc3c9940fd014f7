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
// proportional to what changed. A State holds each kind in a Map, read-only
// (Get, Lookup, Len, All). Snapshots are copy-on-write: a Map's entries are
// spread over 256 shards by key hash, and the first write after a snapshot
// copies the table of shards and the one shard it touches, so a kind that did
// not change costs nothing to snapshot and a change costs the same at 100 or
// 100,000 services (a copy of the kind's whole map, at 10,000 services, was
// ~1.4 MB of garbage and most of the agent's CPU per endpoint change).
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
