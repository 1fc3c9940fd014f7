package svcproxy

import (
	"flag"
	"github.com/nfrouter/nfrouter/integration/golden"
	"maps"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/internal/svcfixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func configOf(c svcfixture.Case) Config {
	return Config{NodeName: svcfixture.NodeName, NodePortBindOnAllIPs: c.BindAll, NodePortCIDRs: c.NodePortCIDRs, MasqueradeAll: c.MasqueradeAll, ClusterCIDRs: c.ClusterCIDRs, ServiceCIDRs: c.ServiceCIDRs}
}

func plan(st *model.State, cfg Config) (*ruleset.Table, *Result) {
	tab := ruleset.NewTable("inet", "nfrouter")
	res := New(tab, cfg).Update(st, &model.Changes{Full: true})
	return tab, res
}

// TestGolden plans each service shape from scratch and compares the nft
// text and the problems with testdata/<case>.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	for _, c := range svcfixture.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			tab, res := plan(c.State, configOf(c))
			got := ruleset.Text(tab)
			for _, p := range res.Problems {
				got += "# problem " + p.Port.String() + " " + p.Reason + ": " + p.Message + "\n"
			}
			golden.Compare(t, filepath.Join("testdata", c.Name+".golden"), got, *update)
		})
	}
}

// TestIncrementalEqualsFull walks random sequences of states drawn from the
// union of every case and checks that planning each step from its changed
// keys yields exactly the table a fresh planner builds, and the same
// problems.
func TestIncrementalEqualsFull(t *testing.T) {
	universe := modeltest.NewState(nil, nil, nil)
	for _, c := range svcfixture.Cases() {
		for k, v := range c.State.ServicePorts.All() {
			universe.ServicePorts = universe.ServicePorts.With(k, v)
		}
		for k, v := range c.State.Nodes.All() {
			universe.Nodes = universe.Nodes.With(k, v)
		}
		for k, e := range c.State.Endpoints.All() {
			universe.Endpoints = universe.Endpoints.With(k, append(universe.Endpoints.Get(k), e...))
		}
	}
	// Variants a step may switch a key to.
	altPorts := map[model.ServicePortKey]*model.ServicePort{}
	for k, sp := range universe.ServicePorts.All() {
		alt := *sp
		alt.AffinityTimeout = 30 - sp.AffinityTimeout%7
		alt.ExternalTrafficLocal = !sp.ExternalTrafficLocal
		alt.NodePort = 31000 + sp.Port%100
		if len(sp.LoadBalancerSourceRanges) > 0 {
			alt.LoadBalancerSourceRanges = sp.LoadBalancerSourceRanges[:1]
		} else if len(sp.LoadBalancerIPs) > 0 {
			alt.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		}
		altPorts[k] = &alt
	}
	altNode := *universe.Nodes.Get(svcfixture.NodeName)
	altNode.InternalIPs = modeltest.Addrs("192.168.1.12", "fd00:1::12")
	altNode.Zone = "b" // topology picks other endpoints
	keys := slices.SortedFunc(universe.ServicePorts.Keys(), model.ServicePortKey.Compare)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []Config{
		{NodeName: svcfixture.NodeName},
		{NodeName: svcfixture.NodeName, NodePortBindOnAllIPs: true, MasqueradeAll: true,
			ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}},
		{NodeName: svcfixture.NodeName, NodePortCIDRs: []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24"), netip.MustParsePrefix("fd00:1::/64")}},
	} {
		tab := ruleset.NewTable("inet", "nfrouter")
		p := New(tab, cfg)
		prev := modeltest.NewState(nil, nil, nil)
		p.Update(prev, &model.Changes{Full: true})
		problems := map[model.ServicePortKey]Problem{}
		for step := range 400 {
			next := modeltest.NewState(nil, nil, nil)
			for k, v := range prev.ServicePorts.All() {
				next.ServicePorts = next.ServicePorts.With(k, v)
			}
			for k, v := range prev.Endpoints.All() {
				next.Endpoints = next.Endpoints.With(k, v)
			}
			for k, v := range prev.Nodes.All() {
				next.Nodes = next.Nodes.With(k, v)
			}
			ch := &model.Changes{}
			for range 1 + rng.IntN(3) {
				k := keys[rng.IntN(len(keys))]
				switch rng.IntN(4) {
				case 0: // the service port comes, changes or goes
					switch {
					case next.ServicePorts.Get(k) == nil:
						next.ServicePorts = next.ServicePorts.With(k, universe.ServicePorts.Get(k))
					case next.ServicePorts.Get(k) == universe.ServicePorts.Get(k) && rng.IntN(2) == 0:
						next.ServicePorts = next.ServicePorts.With(k, altPorts[k])
					default:
						next.ServicePorts = next.ServicePorts.Without(k)
					}
					ch.ServicePorts.Add(k)
				case 1, 2: // a random subset of its endpoints
					all := universe.Endpoints.Get(k)
					var sub model.Endpoints
					for _, e := range all {
						if rng.IntN(3) > 0 {
							sub = append(sub, e)
						}
					}
					if len(sub) == 0 {
						next.Endpoints = next.Endpoints.Without(k)
					} else {
						next.Endpoints = next.Endpoints.With(k, sub)
					}
					ch.Endpoints.Add(k)
				case 3: // this node's addresses, or the other node
					if rng.IntN(2) == 0 {
						if next.Nodes.Get(svcfixture.NodeName) == universe.Nodes.Get(svcfixture.NodeName) {
							next.Nodes = next.Nodes.With(svcfixture.NodeName, &altNode)
						} else {
							next.Nodes = next.Nodes.With(svcfixture.NodeName, universe.Nodes.Get(svcfixture.NodeName))
						}
						ch.Nodes.Add(svcfixture.NodeName)
					} else {
						if next.Nodes.Get("node-b") == nil {
							next.Nodes = next.Nodes.With("node-b", universe.Nodes.Get("node-b"))
						} else {
							next.Nodes = next.Nodes.Without("node-b")
						}
						ch.Nodes.Add("node-b")
					}
				}
			}
			res := p.Update(next, ch)
			for _, pr := range res.Problems {
				if pr.Message == "" {
					delete(problems, pr.Port)
				} else {
					problems[pr.Port] = pr
				}
			}
			want, wantRes := plan(next, cfg)
			if got, w := ruleset.Text(tab), ruleset.Text(want); got != w {
				t.Fatalf("step %d (%+v): incremental plan differs from full plan:\n--- incremental\n%s\n--- full\n%s", step, cfg, got, w)
			}
			wantProblems := map[model.ServicePortKey]Problem{}
			for _, pr := range wantRes.Problems {
				wantProblems[pr.Port] = pr
			}
			if !maps.Equal(problems, wantProblems) {
				t.Fatalf("step %d: problems %v, want %v", step, problems, wantProblems)
			}
			prev = next
		}
	}
}

// TestEndpointChangeEditsElementsOnly checks that an endpoint coming and
// going within the precreated classes journals no chain and no set
// definition, only elements.
func TestEndpointChangeEditsElementsOnly(t *testing.T) {
	c := svcfixture.Cases()[1] // cluster-ip
	if c.Name != "cluster-ip" {
		t.Fatalf("case 1 is %s", c.Name)
	}
	tab := ruleset.NewTable("inet", "nfrouter")
	p := New(tab, configOf(c))
	p.Update(c.State, &model.Changes{Full: true})
	tab.TakeDirty()
	for k, eps := range c.State.Endpoints.All() {
		next := modeltest.NewState(nil, nil, nil)
		for k, v := range c.State.ServicePorts.All() {
			next.ServicePorts = next.ServicePorts.With(k, v)
		}
		for k, v := range c.State.Nodes.All() {
			next.Nodes = next.Nodes.With(k, v)
		}
		next.Endpoints = next.Endpoints.With(k, eps[1:])
		ch := &model.Changes{}
		ch.Endpoints.Add(k)
		p.Update(next, ch)
		chains, sets, elems := tab.TakeDirty()
		if len(chains) != 0 {
			t.Errorf("chains rewritten: %v", chains)
		}
		for _, s := range sets {
			if elems[s] == nil {
				t.Errorf("set %s redefined", s)
			}
		}
		if len(sets) == 0 {
			t.Error("nothing changed")
		}
		if got := strings.Join(sets, " "); !strings.Contains(got, EndpointsMap(model.TCP, false)) {
			t.Errorf("changed sets %s, want %s among them", got, EndpointsMap(model.TCP, false))
		}
	}
}

// TestNoClusterCIDRs checks when the planner says that pods' connections
// are masqueraded for want of cluster CIDRs.
func TestNoClusterCIDRs(t *testing.T) {
	bare := modeltest.NewState([]*model.Node{{Name: svcfixture.NodeName, InternalIPs: modeltest.Addrs("192.168.1.10")}}, nil, nil)
	for _, c := range []struct {
		name string
		cfg  Config
		st   *model.State
		want bool
	}{
		{"no flag, nodes without pod CIDRs", Config{NodeName: svcfixture.NodeName}, bare, true},
		{"--cluster-cidr", Config{NodeName: svcfixture.NodeName, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, bare, false},
		{"--masquerade-all asks for it", Config{NodeName: svcfixture.NodeName, MasqueradeAll: true}, bare, false},
		{"nodes' pod CIDRs", Config{NodeName: svcfixture.NodeName}, modeltest.NewState(svcfixture.Nodes(), nil, nil), false},
	} {
		p := New(ruleset.NewTable("inet", "nfrouter"), c.cfg)
		p.Update(c.st, &model.Changes{Full: true})
		if got := p.NoClusterCIDRs(); got != c.want {
			t.Errorf("%s: NoClusterCIDRs() = %v, want %v", c.name, got, c.want)
		}
	}
}
