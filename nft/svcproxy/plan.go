package svcproxy

import (
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// vipKey is one service address, protocol and port: the unit traffic is
// matched on.
type vipKey struct {
	Addr  netip.Addr
	Proto model.Protocol
	Port  uint16
}

func (k vipKey) compare(o vipKey) int {
	if c := k.Addr.Compare(o.Addr); c != 0 {
		return c
	}
	if k.Proto != o.Proto {
		return int(k.Proto) - int(o.Proto)
	}
	return int(k.Port) - int(o.Port)
}

func (k vipKey) String() string {
	return fmt.Sprintf("%s/%s", k.Proto, netip.AddrPortFrom(k.Addr, k.Port))
}

// endpoint is one endpoint a service address sends new connections to. The
// planner keeps one per endpoint of every service address, so it is held in
// 20 bytes without pointers rather than a netip.AddrPort's 32 (whose zone
// pointer the collector must also follow); endpoint addresses have no zone.
type endpoint struct {
	addr  [16]byte
	port  uint16
	is4   bool
	Local bool // on this node: a candidate for hairpin
}

func newEndpoint(a netip.Addr, port uint16, local bool) endpoint {
	return endpoint{addr: a.As16(), port: port, is4: a.Is4(), Local: local}
}

// Addr is the endpoint's address.
func (e endpoint) Addr() netip.Addr {
	if e.is4 {
		return netip.AddrFrom4([4]byte(e.addr[12:]))
	}
	return netip.AddrFrom16(e.addr)
}

// Port is the endpoint's port.
func (e endpoint) Port() uint16 { return e.port }

// AddrPort is the endpoint's address and port.
func (e endpoint) AddrPort() netip.AddrPort { return netip.AddrPortFrom(e.Addr(), e.port) }

// sameTarget reports whether two endpoints are the same address and port.
func (e endpoint) sameTarget(o endpoint) bool {
	return e.addr == o.addr && e.port == o.port && e.is4 == o.is4
}

// portPlans are what one service port wants at each of its addresses, in
// the order planPort found them. A slice rather than a map: most service
// ports have one address, and a map of one entry takes ~340 bytes (~3 MiB
// at 10,000 services).
type portPlans []vipClaim

type vipClaim struct {
	key  vipKey
	plan *vipPlan
}

// get returns the plan for address k, nil when there is none.
func (ps portPlans) get(k vipKey) *vipPlan {
	for _, c := range ps {
		if c.key == k {
			return c.plan
		}
	}
	return nil
}

// keys yields the addresses planned.
func (ps portPlans) keys() iter.Seq[vipKey] {
	return func(yield func(vipKey) bool) {
		for _, c := range ps {
			if !yield(c.key) {
				return
			}
		}
	}
}

// masquerade says which connections to a service address are masqueraded.
type masquerade uint8

const (
	// masqueradeOutside: connections from outside the cluster CIDRs (a
	// cluster IP: pods keep their address).
	masqueradeOutside masquerade = iota
	// masqueradeAlways: every connection (an external address of a service
	// with external traffic policy Cluster: the endpoint may be on another
	// node, and its reply must come back through this one, also when the
	// client is a pod of a third node; kube-proxy does the same).
	masqueradeAlways
	// masqueradeNever: none (an external address of policy Local, which
	// keeps the client's address; only local endpoints serve it).
	masqueradeNever
)

// vipPlan is what one service port wants at one service address.
type vipPlan struct {
	// Endpoints in slot order (the model's order: by address, then port).
	Endpoints []endpoint
	// ClusterIP: the address is a cluster IP, whose other ports are
	// rejected.
	ClusterIP bool
	// Masquerade says which connections are masqueraded.
	Masquerade masquerade
	// Internal are the endpoints of clients inside the cluster (pods, the
	// node itself) at an external address of traffic policy Local: every
	// serving endpoint, as kube-proxy sends them, since their connection
	// is translated on their own node. Nil for other addresses.
	Internal []endpoint
	// Affinity is the ClientIP session affinity timeout, 0 for none.
	// StickyPort is the endpoints' one target port, which the sticky DNAT
	// needs; 0 when they differ (no affinity then, and a problem).
	Affinity   time.Duration
	StickyPort uint16
	// Restricted: a load-balancer IP of a service with
	// loadBalancerSourceRanges; only clients in Sources (the ranges of the
	// address's family, maybe none) reach it, the others are dropped.
	Restricted bool
	Sources    []netip.Prefix
}

func (p *vipPlan) equal(o *vipPlan) bool {
	return p.ClusterIP == o.ClusterIP && p.Masquerade == o.Masquerade && p.Affinity == o.Affinity && p.StickyPort == o.StickyPort &&
		p.Restricted == o.Restricted && slices.Equal(p.Sources, o.Sources) && slices.Equal(p.Endpoints, o.Endpoints) &&
		slices.Equal(p.Internal, o.Internal)
}

// sticky reports whether the address gets session-affinity rules.
func (p *vipPlan) sticky() bool { return p.Affinity > 0 && p.StickyPort != 0 && len(p.Endpoints) > 0 }

// planPort returns what service port sp wants at each of its addresses: its
// cluster IPs, external IPs and load-balancer IPs on its port, and this
// node's NodePort addresses (of the service's families) on its NodePort.
// An address listed under two kinds counts once, as the first of them. The
// second result is a problem to report, "" when none.
func planPort(sp *model.ServicePort, eps model.Endpoints, node *model.Node, cfg Config) (portPlans, string) {
	if sp == nil {
		return nil, ""
	}
	var out portPlans
	var problem string
	add := func(external bool, addrs []netip.Addr, port uint16) {
		if port == 0 {
			return
		}
		local := sp.Options.Local || (external && sp.ExternalTrafficLocal) || (!external && sp.InternalTrafficLocal)
		for _, a := range addrs {
			k := vipKey{a, sp.Key.Protocol, port}
			if out.get(k) != nil {
				continue
			}
			vp := &vipPlan{ClusterIP: !external}
			switch {
			case external && local:
				vp.Masquerade = masqueradeNever
				if !sp.Options.Local {
					// kube-router's service.local annotation asks for
					// local endpoints only, whoever the client.
					serving := eps.ClusterServing(a.Is4(), node, sp.TrafficDistribution)
					vp.Internal = make([]endpoint, 0, len(serving))
					for _, e := range serving {
						vp.Internal = append(vp.Internal, newEndpoint(e.Addr, e.Port, e.Node == cfg.NodeName))
					}
				}
			case external:
				vp.Masquerade = masqueradeAlways
			}
			serving := eps.Serving(a.Is4(), true, cfg.NodeName)
			if !local {
				// Topology narrows the endpoints of policy Cluster only.
				serving = eps.ClusterServing(a.Is4(), node, sp.TrafficDistribution)
			}
			// Sized up front: the planner keeps every plan, and append's
			// doubling would leave up to half of each unused.
			if len(serving) > 0 {
				vp.Endpoints = make([]endpoint, 0, len(serving))
			}
			for _, e := range serving {
				vp.Endpoints = append(vp.Endpoints, newEndpoint(e.Addr, e.Port, e.Node == cfg.NodeName))
			}
			if sp.AffinityTimeout > 0 {
				vp.Affinity = time.Duration(sp.AffinityTimeout) * time.Second
				vp.StickyPort = commonPort(vp.Endpoints)
				if vp.StickyPort == 0 && len(vp.Endpoints) > 0 {
					problem = "session affinity needs one target port, but the endpoints listen on several; balancing without affinity"
				}
			}
			out = append(out, vipClaim{k, vp})
		}
	}
	add(false, sp.ClusterIPs, sp.Port)
	add(true, sp.ExternalIPs, sp.Port)
	add(true, sp.LoadBalancerIPs, sp.Port)
	if len(sp.LoadBalancerSourceRanges) > 0 {
		for _, a := range sp.LoadBalancerIPs {
			vp := out.get(vipKey{a, sp.Key.Protocol, sp.Port})
			if vp == nil || slices.Contains(sp.ExternalIPs, a) || slices.Contains(sp.ClusterIPs, a) {
				continue // counted as another kind, which no range restricts
			}
			vp.Restricted = true
			for _, r := range sp.LoadBalancerSourceRanges {
				if r.Addr().Is4() == a.Is4() {
					vp.Sources = append(vp.Sources, r)
				}
			}
		}
	}
	var nodeAddrs []netip.Addr
	for _, a := range node.NodePortAddrs(cfg.NodePortBindOnAllIPs, cfg.NodePortCIDRs) {
		if slices.ContainsFunc(sp.ClusterIPs, func(c netip.Addr) bool { return c.Is4() == a.Is4() }) {
			nodeAddrs = append(nodeAddrs, a)
		}
	}
	add(true, nodeAddrs, sp.NodePort)
	return out, problem
}

func commonPort(eps []endpoint) uint16 {
	if len(eps) == 0 {
		return 0
	}
	p := eps[0].Port()
	for _, e := range eps[1:] {
		if e.Port() != p {
			return 0
		}
	}
	return p
}
