// Package cni writes the node's pod CIDRs into the bridge CNI config, as
// kube-router's --enable-cni does: the reference bridge plugin on
// kube-bridge with host-local IPAM hands out pod addresses from this node's
// spec.podCIDRs, and the BGP mesh routes them between nodes. A node then
// needs nothing for pod networking but nfrouter and the reference plugins
// (bridge, host-local, loopback, portmap).
//
// Render is pure: it takes the file as it is (a .conflist or a single-plugin
// .conf, kube-router's shapes, or nothing) and returns it with the bridge
// plugin's ipam ranges set to the pod CIDRs, leaving every other setting the
// user made. Writer is the backend that reads, renders and replaces the file
// atomically, only when its content changes.
package cni
