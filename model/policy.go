package model

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PolicyKey names a NetworkPolicy.
type PolicyKey struct{ Namespace, Name string }

func (k PolicyKey) String() string { return k.Namespace + "/" + k.Name }

// Policy is a NetworkPolicy compiled into the form the firewall renders.
type Policy struct {
	Namespace, Name string
	// PodSelector selects the policy's targets among the pods of Namespace.
	PodSelector Selector
	// Ingress and Egress say which directions the policy isolates, after the
	// API's defaulting of policyTypes.
	Ingress, Egress bool
	IngressRules    []PolicyRule // traffic allowed into the targets
	EgressRules     []PolicyRule // traffic allowed out of the targets
	// Err says why the policy could not be compiled. Such a policy fails closed:
	// its targets are isolated in the directions it names and no rule allows
	// anything, until it is fixed.
	Err string
}

// PolicyRule allows traffic that matches one of Peers (all peers when Peers is
// empty) on one of Ports (all ports when Ports is empty).
type PolicyRule struct {
	Peers []Peer
	Ports []PolicyPort
}

// Peer is one NetworkPolicyPeer: either pods (PodSelector and NamespaceSelector)
// or an IPBlock.
type Peer struct {
	// PodSelector selects pods in the namespaces NamespaceSelector selects;
	// nil selects all of their pods.
	PodSelector *Selector
	// NamespaceSelector selects namespaces; nil means the policy's own.
	NamespaceSelector *Selector
	IPBlock           *IPBlock
}

// IPBlock is a CIDR less some sub-CIDRs.
type IPBlock struct {
	CIDR   netip.Prefix
	Except []netip.Prefix
}

// PolicyPort is a port or port range of one protocol. Port 0 with no Name means
// every port of Protocol; a Name is resolved per destination pod.
type PolicyPort struct {
	Protocol Protocol
	Port     uint16
	EndPort  uint16 // 0 unless a range Port..EndPort
	Name     string
}

// Key returns the policy's key.
func (p *Policy) Key() PolicyKey { return PolicyKey{p.Namespace, p.Name} }

// Selects reports whether the policy targets pod.
func (p *Policy) Selects(pod *Pod) bool {
	return pod.Namespace == p.Namespace && p.PodSelector.Matches(pod.Labels)
}

// Equal reports whether two policies, either of which may be nil, are the same.
// Policies change rarely, so a deep comparison is cheap enough.
func (p *Policy) Equal(o *Policy) bool {
	if p == nil || o == nil {
		return p == o
	}
	return reflect.DeepEqual(p, o)
}

// PolicyFromAPI compiles a NetworkPolicy. It never fails: a policy that cannot be
// compiled comes back with Err set and no rules (fail closed), so that its
// targets are isolated rather than left open. When even the pod selector is
// invalid, the policy isolates every pod of its namespace.
func PolicyFromAPI(np *networkingv1.NetworkPolicy) *Policy {
	p := &Policy{Namespace: np.Namespace, Name: np.Name}
	p.Ingress, p.Egress = policyTypes(np)
	sel, err := SelectorFromAPI(&np.Spec.PodSelector)
	if err != nil {
		p.Err = fmt.Sprintf("podSelector: %v", err)
		return p
	}
	p.PodSelector = *sel
	var errs []error
	if p.Ingress {
		for i, r := range np.Spec.Ingress {
			rule, err := compileRule(r.From, r.Ports)
			if err != nil {
				errs = append(errs, fmt.Errorf("ingress[%d]: %w", i, err))
			}
			p.IngressRules = append(p.IngressRules, rule)
		}
	}
	if p.Egress {
		for i, r := range np.Spec.Egress {
			rule, err := compileRule(r.To, r.Ports)
			if err != nil {
				errs = append(errs, fmt.Errorf("egress[%d]: %w", i, err))
			}
			p.EgressRules = append(p.EgressRules, rule)
		}
	}
	if err := errors.Join(errs...); err != nil {
		p.Err = err.Error()
		p.IngressRules, p.EgressRules = nil, nil
	}
	return p
}

// policyTypes applies the API's defaulting: Ingress always, Egress when there
// are egress rules, unless policyTypes is given.
func policyTypes(np *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

func compileRule(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) (PolicyRule, error) {
	var rule PolicyRule
	for i, pe := range peers {
		peer, err := compilePeer(pe)
		if err != nil {
			return PolicyRule{}, fmt.Errorf("peer %d: %w", i, err)
		}
		rule.Peers = append(rule.Peers, peer)
	}
	for i, po := range ports {
		port, err := compilePort(po)
		if err != nil {
			return PolicyRule{}, fmt.Errorf("port %d: %w", i, err)
		}
		rule.Ports = append(rule.Ports, port)
	}
	return rule, nil
}

func compilePeer(pe networkingv1.NetworkPolicyPeer) (Peer, error) {
	if pe.IPBlock != nil {
		if pe.PodSelector != nil || pe.NamespaceSelector != nil {
			return Peer{}, errors.New("ipBlock cannot be combined with selectors")
		}
		b, err := compileIPBlock(pe.IPBlock)
		return Peer{IPBlock: b}, err
	}
	if pe.PodSelector == nil && pe.NamespaceSelector == nil {
		return Peer{}, errors.New("peer selects nothing: give podSelector, namespaceSelector or ipBlock")
	}
	var peer Peer
	var err error
	if peer.PodSelector, err = SelectorFromAPI(pe.PodSelector); err != nil {
		return Peer{}, fmt.Errorf("podSelector: %w", err)
	}
	if peer.NamespaceSelector, err = SelectorFromAPI(pe.NamespaceSelector); err != nil {
		return Peer{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	return peer, nil
}

func compileIPBlock(b *networkingv1.IPBlock) (*IPBlock, error) {
	cidr, err := parsePrefix(b.CIDR)
	if err != nil {
		return nil, fmt.Errorf("ipBlock: %w", err)
	}
	out := &IPBlock{CIDR: cidr}
	for _, e := range b.Except {
		ex, err := parsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("ipBlock except: %w", err)
		}
		if ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()) {
			return nil, fmt.Errorf("ipBlock except %s is not strictly inside %s", ex, cidr)
		}
		out.Except = append(out.Except, ex)
	}
	return out, nil
}

func compilePort(po networkingv1.NetworkPolicyPort) (PolicyPort, error) {
	var proto Protocol = TCP
	if po.Protocol != nil {
		var err error
		if proto, err = protocolFromAPI(*po.Protocol); err != nil {
			return PolicyPort{}, err
		}
	}
	out := PolicyPort{Protocol: proto}
	if po.Port == nil {
		if po.EndPort != nil {
			return PolicyPort{}, errors.New("endPort given without port")
		}
		return out, nil
	}
	if po.Port.Type == intstr.String {
		if po.EndPort != nil {
			return PolicyPort{}, fmt.Errorf("endPort cannot go with named port %q", po.Port.StrVal)
		}
		out.Name = po.Port.StrVal
		return out, nil
	}
	if po.Port.IntVal < 1 || po.Port.IntVal > 65535 {
		return PolicyPort{}, fmt.Errorf("port %d out of range", po.Port.IntVal)
	}
	out.Port = uint16(po.Port.IntVal)
	if po.EndPort != nil {
		if *po.EndPort < po.Port.IntVal || *po.EndPort > 65535 {
			return PolicyPort{}, fmt.Errorf("endPort %d invalid for port %d", *po.EndPort, po.Port.IntVal)
		}
		if *po.EndPort > po.Port.IntVal {
			out.EndPort = uint16(*po.EndPort)
		}
	}
	return out, nil
}
