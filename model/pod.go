package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodKey names a pod.
type PodKey struct{ Namespace, Name string }

func (k PodKey) String() string { return k.Namespace + "/" + k.Name }

// Pod is what the firewall knows of a pod that can be a policy target or peer.
type Pod struct {
	Namespace, Name string
	Node            string
	IPs             []netip.Addr // sorted
	Labels          map[string]string
	Ports           []ContainerPort // sorted by name, protocol, port
}

// ContainerPort is a declared container port; named ones resolve NetworkPolicy
// ports given by name.
type ContainerPort struct {
	Name     string
	Protocol Protocol
	Port     uint16
}

// Key returns the pod's key.
func (p *Pod) Key() PodKey { return PodKey{p.Namespace, p.Name} }

// PodFromAPI converts a pod. It returns nil for pods that are neither policy
// targets nor peers: hostNetwork pods (the node's rules apply to them), pods
// without an IP yet, and pods that have finished.
//
// Labels are shared with the API object rather than copied: informer objects are
// read-only by contract, and pods are the most numerous object we hold.
func PodFromAPI(p *corev1.Pod) (*Pod, error) {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil, nil
	}
	var ips []netip.Addr
	var err error
	if len(p.Status.PodIPs) > 0 {
		s := make([]string, len(p.Status.PodIPs))
		for i, ip := range p.Status.PodIPs {
			s[i] = ip.IP
		}
		ips, err = parseAddrs(s)
	} else if p.Status.PodIP != "" {
		ips, err = parseAddrs([]string{p.Status.PodIP})
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if len(ips) == 0 {
		return nil, nil
	}
	return &Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		Node:      p.Spec.NodeName,
		IPs:       ips,
		Labels:    p.Labels,
		Ports:     containerPorts(p),
	}, nil
}

func containerPorts(p *corev1.Pod) []ContainerPort {
	var out []ContainerPort
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			proto, err := protocolFromAPI(cp.Protocol)
			if err != nil || cp.ContainerPort <= 0 || cp.ContainerPort > 65535 {
				continue // the API server rejects these; nothing could match them
			}
			out = append(out, ContainerPort{Name: cp.Name, Protocol: proto, Port: uint16(cp.ContainerPort)})
		}
	}
	slices.SortFunc(out, func(a, b ContainerPort) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Protocol != b.Protocol {
			return int(a.Protocol) - int(b.Protocol)
		}
		return int(a.Port) - int(b.Port)
	})
	return out
}

// NamedPort resolves a port name for a protocol, as NetworkPolicy ports given by
// name do.
func (p *Pod) NamedPort(name string, proto Protocol) (uint16, bool) {
	for _, cp := range p.Ports {
		if cp.Name == name && cp.Protocol == proto {
			return cp.Port, true
		}
	}
	return 0, false
}

// Equal reports whether two pods, either of which may be nil, are the same.
func (p *Pod) Equal(o *Pod) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Namespace == o.Namespace && p.Name == o.Name && p.Node == o.Node &&
		slices.Equal(p.IPs, o.IPs) && maps.Equal(p.Labels, o.Labels) && slices.Equal(p.Ports, o.Ports)
}
