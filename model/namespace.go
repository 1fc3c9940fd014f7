package model

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// Namespace is a namespace's labels, which namespace selectors match.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// NamespaceFromAPI converts a namespace. Labels are shared with the API object,
// which informers hand out read-only.
func NamespaceFromAPI(ns *corev1.Namespace) *Namespace {
	return &Namespace{Name: ns.Name, Labels: ns.Labels}
}

// Equal reports whether two namespaces, either of which may be nil, are the same.
func (n *Namespace) Equal(o *Namespace) bool {
	if n == nil || o == nil {
		return n == o
	}
	return n.Name == o.Name && maps.Equal(n.Labels, o.Labels)
}
