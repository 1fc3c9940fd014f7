package nft

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/egress"
	"github.com/nfrouter/nfrouter/nft/internal/svcfixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// shape is one golden shape of a part: a state and the parts that plan it.
type shape struct {
	name  string
	state *model.State
	parts func(t testing.TB, tbl *ruleset.Table, ns int) []Part
}

// render is the shape's dry-run text.
func (s shape) render(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	if err := Render(t.Context(), &b, s.state, func(tbl *ruleset.Table) ([]Part, error) { return s.parts(t, tbl, 0), nil }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// allShapes are the shapes of every part's golden tests: the firewall's
// (netpol/testdata), the nftables service proxy's (svcfixture), the IPVS
// proxy's NAT helpers (the flags of ipvs/testdata/nat over a dual-stack
// service with a node port and a hairpin annotation) and pod egress.
func allShapes(t testing.TB) []shape {
	var out []shape
	for _, name := range cases(t) {
		dd := strings.HasPrefix(name, "default-deny")
		out = append(out, shape{name: "netpol/" + strings.TrimSuffix(name, ".yaml"), state: loadCase(t, name).State,
			parts: func(t testing.TB, tbl *ruleset.Table, ns int) []Part {
				f, err := NewFirewall(tbl, FirewallConfig{NodeName: "node-a", DefaultDeny: dd, NetNSFd: ns})
				if err != nil {
					t.Fatal(err)
				}
				return []Part{f}
			}})
	}
	for _, c := range svcfixture.Cases() {
		out = append(out, shape{name: "svcproxy/" + c.Name, state: c.State,
			parts: func(t testing.TB, tbl *ruleset.Table, ns int) []Part {
				p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: svcfixture.NodeName, NodePortBindOnAllIPs: c.BindAll, NodePortCIDRs: c.NodePortCIDRs,
					MasqueradeAll: c.MasqueradeAll, ClusterCIDRs: c.ClusterCIDRs, NetNSFd: ns})
				if err != nil {
					t.Fatal(err)
				}
				return []Part{p}
			}})
	}
	web := modeltest.Svc("default", "web", 80, modeltest.ClusterIPs("10.96.0.10", "fd00:96::10"), modeltest.NodePort(30080),
		func(sp *model.ServicePort) { sp.Options.Hairpin = true })
	ipvsState := modeltest.NewState(svcfixture.Nodes(), []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{web.Key: {
		modeltest.Ep("10.1.0.2:8080@"+svcfixture.NodeName, "rs"), modeltest.Ep("[fd00:10::2]:8080@"+svcfixture.NodeName, "rs"),
		modeltest.Ep("10.1.1.3:8080@node-b", "rs")}})
	for _, c := range []struct {
		name string
		cfg  ipvs.NATConfig
	}{
		{"default", ipvs.NATConfig{}},
		{"masquerade-all", ipvs.NATConfig{MasqueradeAll: true}},
		{"hairpin-mode", ipvs.NATConfig{HairpinAll: true}},
		{"cluster-cidr-flag", ipvs.NATConfig{ClusterCIDRs: prefixesOf("10.0.0.0/8", "fd00:10::/56")}},
	} {
		c.cfg.NodeName = svcfixture.NodeName
		out = append(out, shape{name: "ipvs-nat/" + c.name, state: ipvsState,
			parts: func(_ testing.TB, tbl *ruleset.Table, _ int) []Part { return []Part{ipvs.NewNAT(tbl, c.cfg)} }})
	}
	nodes := map[string]*model.Node{}
	for _, n := range svcfixture.Nodes() {
		nodes[n.Name] = n
	}
	out = append(out, shape{name: "egress/dual-stack", state: &model.State{Nodes: model.MapOf(nodes)},
		parts: func(_ testing.TB, tbl *ruleset.Table, _ int) []Part { return []Part{egress.New(tbl)} }})
	sets, elems, chains := primitiveChains()
	sets, elems, chains = withVerdictMaps(sets, elems, chains)
	out = append(out, shape{name: "primitives", state: &model.State{},
		parts: func(_ testing.TB, tbl *ruleset.Table, _ int) []Part {
			return []Part{&fixedPart{t: tbl, sets: sets, elems: elems, chains: chains}}
		}})
	return out
}

// guestShapes are the shapes the nft compatibility tests run in a VM guest,
// where each nft run takes a second under emulation: one of each kind of
// object (the encoding depends on the kind, not on the shape); the host
// runs all of them.
var guestShapes = []string{"netpol/ports", "netpol/ipblock", "svcproxy/session-affinity", "svcproxy/dual-stack",
	"ipvs-nat/hairpin-mode", "egress/dual-stack", "primitives"}

// compatShapes are the shapes the nft compatibility tests run here.
func compatShapes(t testing.TB) []shape {
	all := allShapes(t)
	if !kerneltest.InGuest() {
		return all
	}
	return slices.DeleteFunc(all, func(s shape) bool { return !slices.Contains(guestShapes, s.name) })
}

// withVerdictMaps adds what no planner writes yet to the primitives of
// primitiveChains: verdict maps of both families (AddrVmap) and the
// regular chain their elements jump to.
func withVerdictMaps(sets []ruleset.Set, elems map[string][]ruleset.Element, chains []*ruleset.Chain) ([]ruleset.Set, map[string][]ruleset.Element, []*ruleset.Chain) {
	sets = append(slices.Clone(sets), ruleset.Set{Name: "vmap4", Type: ruleset.Addr4, Verdict: true, Comment: "to chains"},
		ruleset.Set{Name: "vmap6", Type: ruleset.Addr6, Verdict: true})
	elems = maps.Clone(elems)
	elems["vmap4"] = []ruleset.Element{{Addr: netip.MustParseAddr("10.1.0.2"), Jump: "target"}}
	elems["vmap6"] = []ruleset.Element{{Addr: netip.MustParseAddr("fd00:1::2"), Jump: "target"}}
	chains = append(slices.Clone(chains),
		&ruleset.Chain{Name: "target", Comment: "a jump target", Rules: []ruleset.Rule{{Verdict: ruleset.Drop{}}}},
		&ruleset.Chain{Name: "filter-forward", Base: &ruleset.Hook{Hook: "forward", Type: "filter", Drop: true}, Rules: []ruleset.Rule{
			{Verdict: ruleset.AddrVmap{Map: "vmap4"}},
			{Verdict: ruleset.AddrVmap{V6: true, Src: true, Map: "vmap6"}},
		}})
	return sets, elems, chains
}

// TestGuestShapesExist keeps the VM guest's list of shapes in step with the
// shapes: a renamed shape would silently leave the guest untested.
func TestGuestShapesExist(t *testing.T) {
	var names []string
	for _, s := range allShapes(t) {
		names = append(names, s.name)
	}
	for _, n := range guestShapes {
		if !slices.Contains(names, n) {
			t.Errorf("guest shape %s is no shape (shapes: %v)", n, names)
		}
	}
}
