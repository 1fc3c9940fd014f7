package netpol

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestFamiliesFollowAddresses plans an IPv4-only version of the ipblock and
// default-deny fixtures, which must hold no IPv6 set or rule, then brings the
// IPv6 addresses back incrementally and expects the full dual-stack plan;
// and back again. Objects of another part in the table are left alone.
func TestFamiliesFollowAddresses(t *testing.T) {
	for _, name := range []string{"ipblock.yaml", "default-deny.yaml", "ports.yaml"} {
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			dual := load(t, name)
			v4 := dual.Clone()
			for k, pod := range v4.Pods.All() {
				q := *pod
				q.IPs = slices.DeleteFunc(slices.Clone(q.IPs), netip.Addr.Is6)
				v4.Pods = v4.Pods.With(k, &q)
			}
			for k, n := range v4.Nodes.All() {
				q := *n
				q.PodCIDRs = slices.DeleteFunc(slices.Clone(q.PodCIDRs), func(p netip.Prefix) bool { return p.Addr().Is6() })
				v4.Nodes = v4.Nodes.With(k, &q)
			}
			for k, pol := range v4.Policies.All() {
				if hasV6Block(pol) {
					v4.Policies = v4.Policies.Without(k)
				}
			}
			cfg := Config{NodeName: "node-a", DefaultDeny: true}
			tab, p := plan(v4.State, cfg)
			for _, s := range tab.Sets {
				if s.Type == ruleset.Addr6 || s.Type == ruleset.AddrProtoPort6 {
					t.Errorf("IPv4-only state has IPv6 set %s", s.Name)
				}
			}
			if text := ruleset.Text(tab); strings.Contains(text, "ip6 ") {
				t.Errorf("IPv4-only state has IPv6 rules:\n%s", text)
			}
			// Another part's objects in the same table survive the replanning
			// a family change causes.
			foreign := func(t *ruleset.Table) {
				t.PutChain(&ruleset.Chain{Name: "other-part", Rules: []ruleset.Rule{{Verdict: ruleset.Accept{}}}})
				t.PutSet(ruleset.Set{Name: "other-part-set", Type: ruleset.Addr4})
			}
			foreign(tab)
			for _, step := range []struct {
				name string
				st   *model.State
			}{{"dual-stack", dual.State}, {"IPv4 again", v4.State}} {
				p.Update(step.st, nil)
				want, _ := plan(step.st, cfg)
				if tab.Chains["other-part"] == nil || tab.Sets["other-part-set"] == nil {
					t.Fatalf("%s: the firewall removed another part's objects", step.name)
				}
				foreign(want)
				if got, w := ruleset.Text(tab), ruleset.Text(want); got != w {
					t.Fatalf("%s: incremental plan differs from full plan:\n--- incremental\n%s\n--- full\n%s", step.name, got, w)
				}
			}
		})
	}
}

func hasV6Block(pol *model.Policy) bool {
	var c famCount
	c.policy(1, pol)
	return c[1] > 0
}
