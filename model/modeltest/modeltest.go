// Package modeltest builds model values for tests: service ports,
// endpoints and states, in a line each.
package modeltest

import (
	"net/netip"
	"strings"

	"github.com/nfrouter/nfrouter/model"
)

// Svc builds a TCP service port; opts tweak it.
func Svc(ns, name string, port uint16, opts ...func(*model.ServicePort)) *model.ServicePort {
	sp := &model.ServicePort{Key: model.ServicePortKey{Namespace: ns, Name: name, Protocol: model.TCP}, Port: port}
	for _, o := range opts {
		o(sp)
	}
	return sp
}

// Addrs parses addresses.
func Addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// ClusterIPs sets the cluster IPs.
func ClusterIPs(ss ...string) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.ClusterIPs = Addrs(ss...) }
}

// Proto sets the protocol and port name.
func Proto(p model.Protocol, portName string) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.Key.Protocol, sp.Key.Port = p, portName }
}

// NodePort sets the NodePort.
func NodePort(n uint16) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.NodePort = n }
}

// Affinity sets ClientIP session affinity.
func Affinity(seconds int32) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.AffinityTimeout = seconds }
}

// Ep builds an endpoint "addr:port@node" with conditions r (ready), s
// (serving), t (terminating).
func Ep(spec, conds string) model.Endpoint {
	at := strings.SplitN(spec, "@", 2)
	ap := netip.MustParseAddrPort(at[0])
	e := model.Endpoint{Addr: ap.Addr(), Port: ap.Port()}
	if len(at) == 2 {
		e.Node = at[1]
	}
	e.Ready = strings.Contains(conds, "r")
	e.Serving = strings.Contains(conds, "s")
	e.Terminating = strings.Contains(conds, "t")
	return e
}

// NewState returns a state with the nodes, service ports and endpoints.
func NewState(nodes []*model.Node, ports []*model.ServicePort, eps map[model.ServicePortKey]model.Endpoints) *model.State {
	st := &model.State{}
	for _, sp := range ports {
		st.ServicePorts = st.ServicePorts.With(sp.Key, sp)
	}
	for k, e := range eps {
		st.Endpoints = st.Endpoints.With(k, e)
	}
	for _, n := range nodes {
		st.Nodes = st.Nodes.With(n.Name, n)
	}
	return st
}

// ServiceChanges lists the service ports, endpoints and nodes that differ
// between a and b, as the Store would report them.
func ServiceChanges(a, b *model.State) *model.Changes {
	c := &model.Changes{}
	for _, m := range []model.Map[model.ServicePortKey, *model.ServicePort]{a.ServicePorts, b.ServicePorts} {
		for k := range m.All() {
			if !a.ServicePorts.Get(k).Equal(b.ServicePorts.Get(k)) {
				c.ServicePorts.Add(k)
			}
			if !a.Endpoints.Get(k).Equal(b.Endpoints.Get(k)) {
				c.Endpoints.Add(k)
			}
		}
	}
	for _, m := range []model.Map[string, *model.Node]{a.Nodes, b.Nodes} {
		for k := range m.All() {
			if !a.Nodes.Get(k).Equal(b.Nodes.Get(k)) {
				c.Nodes.Add(k)
			}
		}
	}
	return c
}
