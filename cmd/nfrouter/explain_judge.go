package main

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// explainQuery is one connection to explain.
type explainQuery struct {
	from, to    string // POD (namespace/name) or IP
	proto       model.Protocol
	port        uint16
	family      int  // 4 or 6: the address family of pods; 0: IPv4 where both ends have it
	defaultDeny bool // --netpol-default-deny of the agents
}

// explanation is what explain answers: the verdict, the policies that
// decide it and the path the packet takes through each node's firewall.
type explanation struct {
	From     endpoint        `json:"from"`
	To       endpoint        `json:"to"`
	Protocol string          `json:"protocol"`
	Port     uint16          `json:"port"`
	Allowed  bool            `json:"allowed"`
	Policies []policyVerdict `json:"policies"`
	Nodes    []nodePath      `json:"nodes"`
	Note     string          `json:"note,omitempty"`
}

// endpoint is one end of the connection.
type endpoint struct {
	IP   netip.Addr `json:"ip"`
	Kind string     `json:"kind"`           // pod, node (an address of a node) or outside
	Pod  string     `json:"pod,omitempty"`  // namespace/name
	Node string     `json:"node,omitempty"` // the pod's node, or the node the address is of
	pod  *model.Pod
}

const (
	kindPod     = "pod"
	kindNode    = "node"
	kindOutside = "outside"
)

// policyVerdict is one policy isolating an end of the connection: the
// source's egress policies and the destination's ingress policies.
type policyVerdict struct {
	Policy    string `json:"policy"`
	Selects   string `json:"selects"`   // source or destination
	Direction string `json:"direction"` // egress or ingress
	Allows    bool   `json:"allows"`
	Error     string `json:"error,omitempty"` // why the policy fails closed
}

// nodePath is the packet's way through one node's firewall.
type nodePath struct {
	Node    string     `json:"node"`
	Hook    string     `json:"hook"` // forward, output (sent by the node) or input (to the node)
	Allowed bool       `json:"allowed"`
	Egress  *chainPath `json:"egress,omitempty"`
	Ingress *chainPath `json:"ingress,omitempty"` // nil when egress dropped the packet
	Note    string     `json:"note,omitempty"`
}

// chainPath is a trace through one base chain.
type chainPath struct {
	Chain    string `json:"chain"`
	Accepted bool   `json:"accepted"`
	Steps    []step `json:"steps"`
}

type step struct {
	Chain  string `json:"chain"`
	Rule   string `json:"rule"`
	Policy string `json:"policy,omitempty"` // the policy whose rules the chain holds
}

// explainer answers queries against one model, planning each node's
// firewall table once, with the planner the agent programs the kernel with.
type explainer struct {
	st          *model.State
	defaultDeny bool
	tables      map[string]*ruleset.Table
	chainPolicy map[string]string // policy chain name -> namespace/name
}

func newExplainer(st *model.State, defaultDeny bool) *explainer {
	e := &explainer{st: st, defaultDeny: defaultDeny, tables: map[string]*ruleset.Table{}, chainPolicy: map[string]string{}}
	for k := range st.Policies.All() {
		for _, in := range []bool{true, false} {
			e.chainPolicy[netpol.PolicyChain(k, in)] = k.String()
		}
	}
	return e
}

// table is the firewall table the agent on node programs for the model.
func (e *explainer) table(node string) *ruleset.Table {
	if t := e.tables[node]; t != nil {
		return t
	}
	t := ruleset.NewTable(netpol.Family, netpol.Table)
	netpol.New(t, netpol.Config{NodeName: node, DefaultDeny: e.defaultDeny}).Update(e.st, nil)
	e.tables[node] = t
	return t
}

// explain judges the first packet of the connection q describes.
func (e *explainer) explain(q explainQuery) (*explanation, error) {
	from, err := e.resolve(q.from)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	to, err := e.resolve(q.to)
	if err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	if err := pickAddresses(&from, &to, q.family); err != nil {
		return nil, err
	}
	x := &explanation{From: from, To: to, Protocol: strings.ToUpper(q.proto.String()), Port: q.port, Allowed: true,
		Policies: []policyVerdict{}, Nodes: []nodePath{}}
	pkt := ruleset.Packet{Src: from.IP, Dst: to.IP, Proto: uint8(q.proto), DPort: q.port}
	if from.IP == to.IP {
		x.Note = "a connection to its own address never leaves the pod or node: no firewall sees it"
		return x, nil
	}
	for _, node := range e.nodesOnPath(from, to) {
		p, err := e.judgeOn(node, pkt)
		if err != nil {
			return nil, err
		}
		x.Allowed = x.Allowed && p.Allowed
		x.Nodes = append(x.Nodes, p)
	}
	if len(x.Nodes) == 0 {
		x.Note = "neither end is a pod or a node of the cluster: no nfrouter firewall sees this connection"
	}
	if x.Policies, err = e.policies(from, to, pkt); err != nil {
		return nil, err
	}
	return x, nil
}

// resolve finds what spec names: a pod as namespace/name, or an address
// of a pod, of a node, or of neither.
func (e *explainer) resolve(spec string) (endpoint, error) {
	if ip, err := netip.ParseAddr(spec); err == nil {
		ip = ip.Unmap()
		if pod := e.podWithIP(ip); pod != nil {
			return endpoint{IP: ip, Kind: kindPod, Pod: pod.Key().String(), Node: pod.Node, pod: pod}, nil
		}
		if node := e.nodeWithIP(ip); node != "" {
			return endpoint{IP: ip, Kind: kindNode, Node: node}, nil
		}
		if svc := e.serviceWithIP(ip); svc != "" {
			// Policies judge the packet after the proxy chose an endpoint.
			return endpoint{}, fmt.Errorf("%s is an address of service %s: name one of its pods instead", ip, svc)
		}
		return endpoint{IP: ip, Kind: kindOutside}, nil
	}
	ns, name, ok := strings.Cut(spec, "/")
	if !ok || ns == "" || name == "" {
		return endpoint{}, fmt.Errorf("%q is neither an IP address nor a pod as namespace/name", spec)
	}
	pod := e.st.Pods.Get(model.PodKey{Namespace: ns, Name: name})
	if pod == nil {
		return endpoint{}, fmt.Errorf("no pod %s with an address (hostNetwork and finished pods are not the firewall's)", spec)
	}
	if pod.Node == "" {
		return endpoint{}, fmt.Errorf("pod %s runs on no node", spec)
	}
	return endpoint{Kind: kindPod, Pod: spec, Node: pod.Node, pod: pod}, nil
}

// podWithIP returns the pod with address ip, the first by key if several
// claim it.
func (e *explainer) podWithIP(ip netip.Addr) *model.Pod {
	var found *model.Pod
	for k, p := range e.st.Pods.All() {
		if slices.Contains(p.IPs, ip) && (found == nil || k.String() < found.Key().String()) {
			found = p
		}
	}
	return found
}

// nodeWithIP returns the node that has address ip, or "".
func (e *explainer) nodeWithIP(ip netip.Addr) string {
	for _, name := range slices.Sorted(e.st.Nodes.Keys()) {
		n := e.st.Nodes.Get(name)
		if slices.Contains(n.InternalIPs, ip) || slices.Contains(n.ExternalIPs, ip) {
			return name
		}
	}
	return ""
}

// serviceWithIP returns the service (namespace/name) that ip is a cluster,
// external or load-balancer address of, or "".
func (e *explainer) serviceWithIP(ip netip.Addr) string {
	for k, sp := range e.st.ServicePorts.All() {
		if slices.Contains(sp.ClusterIPs, ip) || slices.Contains(sp.ExternalIPs, ip) || slices.Contains(sp.LoadBalancerIPs, ip) {
			return k.Namespace + "/" + k.Name
		}
	}
	return ""
}

// pickAddresses chooses the pods' addresses: of the family the other end's
// address has, else of family (IPv4 first when 0).
func pickAddresses(from, to *endpoint, family int) error {
	fams := []int{4, 6}
	switch {
	case from.IP.IsValid():
		fams = []int{famOf(from.IP)}
	case to.IP.IsValid():
		fams = []int{famOf(to.IP)}
	case family != 0:
		fams = []int{family}
	}
	for _, f := range fams {
		a, okA := addrOf(*from, f)
		b, okB := addrOf(*to, f)
		if okA && okB {
			from.IP, to.IP = a, b
			return nil
		}
	}
	if from.IP.IsValid() && to.IP.IsValid() {
		return fmt.Errorf("%s and %s are of different address families", from.IP, to.IP)
	}
	return fmt.Errorf("%s and %s have no address of a common family (IPv%d)", from.name(), to.name(), fams[0])
}

func addrOf(e endpoint, family int) (netip.Addr, bool) {
	if e.IP.IsValid() {
		return e.IP, famOf(e.IP) == family
	}
	for _, ip := range e.pod.IPs {
		if famOf(ip) == family {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func famOf(ip netip.Addr) int {
	if ip.Is4() {
		return 4
	}
	return 6
}

func (e endpoint) name() string {
	if e.Pod != "" {
		return e.Pod
	}
	return e.IP.String()
}

// nodesOnPath lists the nodes whose firewall sees the packet: the
// source's, then the destination's. An address outside the cluster has
// none.
func (e *explainer) nodesOnPath(from, to endpoint) []string {
	var out []string
	for _, n := range []string{from.Node, to.Node} {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// judgeOn traces pkt through node's firewall at the hook that sees it there.
func (e *explainer) judgeOn(node string, pkt ruleset.Packet) (nodePath, error) {
	p := nodePath{Node: node, Hook: "forward"}
	if e.nodeWithIP(pkt.Dst) == node {
		p.Hook, p.Allowed = "input", true
		p.Note = "traffic to the node itself is not filtered"
		return p, nil
	}
	egressChain, ingressChain := netpol.ChainEgress, netpol.ChainIngress
	if e.nodeWithIP(pkt.Src) == node {
		pkt.SrcLocal = true
		p.Hook = "output"
		egressChain, ingressChain = netpol.ChainEgressOutput, netpol.ChainIngressOutput
	}
	v, err := netpol.Judge(e.table(node), pkt)
	if err != nil {
		return p, fmt.Errorf("node %s: %w", node, err)
	}
	p.Allowed = v.Allowed
	p.Egress = e.chainPath(egressChain, v.Egress)
	if v.Egress.Accepted {
		p.Ingress = e.chainPath(ingressChain, v.Ingress)
	}
	return p, nil
}

func (e *explainer) chainPath(base string, r ruleset.TraceResult) *chainPath {
	c := &chainPath{Chain: base, Accepted: r.Accepted, Steps: []step{}}
	for _, s := range r.Steps {
		c.Steps = append(c.Steps, step{Chain: s.Chain, Rule: s.Rule, Policy: e.chainPolicy[s.Chain]})
	}
	return c
}

// policies lists the source pod's egress policies and the destination
// pod's ingress policies, each with whether its own rules allow pkt, read
// from the table of the node that judges that side.
func (e *explainer) policies(from, to endpoint, pkt ruleset.Packet) ([]policyVerdict, error) {
	out := []policyVerdict{}
	for _, side := range []struct {
		end       endpoint
		isIngress bool
	}{{from, false}, {to, true}} {
		if side.end.pod == nil {
			continue
		}
		sidePkt := pkt
		sidePkt.SrcLocal = false // a pod's own address is never the node's
		var keys []model.PolicyKey
		for k, pol := range e.st.Policies.All() {
			if pol.Selects(side.end.pod) && ((side.isIngress && pol.Ingress) || (!side.isIngress && pol.Egress)) {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b model.PolicyKey) int { return cmp.Compare(a.String(), b.String()) })
		for _, k := range keys {
			allows, _, err := netpol.PolicyAllows(e.table(side.end.Node), k, side.isIngress, sidePkt)
			if err != nil {
				return nil, err
			}
			v := policyVerdict{Policy: k.String(), Allows: allows, Error: e.st.Policies.Get(k).Err,
				Selects: "source", Direction: "egress"}
			if side.isIngress {
				v.Selects, v.Direction = "destination", "ingress"
			}
			out = append(out, v)
		}
	}
	return out, nil
}
