package svcproxy

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/internal/svcfixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestTopologyPicksThisZonesEndpoints follows the topology case through
// changes: this node (zone a) uses web's zone-a endpoints while there are
// any, every endpoint when none is left, and zone b's when it moves there.
func TestTopologyPicksThisZonesEndpoints(t *testing.T) {
	var c svcfixture.Case
	for _, x := range svcfixture.Cases() {
		if x.Name == "topology" {
			c = x
		}
	}
	webKey := model.ServicePortKey{Namespace: "default", Name: "web", Protocol: model.TCP}
	clusterIP := vipKey{netip.MustParseAddr("10.96.0.10"), model.TCP, 80}
	nodePort := vipKey{netip.MustParseAddr("192.168.1.10"), model.TCP, 30080}
	p := New(ruleset.NewTable("inet", "nfrouter"), configOf(c))
	st := c.State
	check := func(step string, want ...string) {
		t.Helper()
		for _, vk := range []vipKey{clusterIP, nodePort} {
			var got []string
			for _, e := range p.programmed[vk].plan.Endpoints {
				got = append(got, e.AddrPort().String())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s sends to %v, want %v", step, vk, got, want)
			}
		}
	}
	next := func(edit func(*model.State), ch *model.Changes) {
		n := modeltest.NewState(nil, nil, nil)
		for k, v := range st.ServicePorts.All() {
			n.ServicePorts = n.ServicePorts.With(k, v)
		}
		for k, v := range st.Endpoints.All() {
			n.Endpoints = n.Endpoints.With(k, v)
		}
		for k, v := range st.Nodes.All() {
			n.Nodes = n.Nodes.With(k, v)
		}
		edit(n)
		st = n
		p.Update(st, ch)
	}

	p.Update(st, &model.Changes{Full: true})
	check("zone a", "10.1.0.2:8080", "10.1.2.4:8080")

	ch := &model.Changes{}
	ch.Endpoints.Add(webKey)
	next(func(n *model.State) {
		eps := slices.Clone(n.Endpoints.Get(webKey))
		eps[0].Ready, eps[2].Ready = false, false // zone a's leave
		n.Endpoints = n.Endpoints.With(webKey, eps)
	}, ch)
	check("no ready endpoint in zone a", "10.1.1.3:8080")

	next(func(n *model.State) { n.Endpoints = n.Endpoints.With(webKey, c.State.Endpoints.Get(webKey)) }, ch)
	check("zone a's are back", "10.1.0.2:8080", "10.1.2.4:8080")

	ch = &model.Changes{}
	ch.Nodes.Add(svcfixture.NodeName)
	next(func(n *model.State) {
		moved := *n.Nodes.Get(svcfixture.NodeName)
		moved.Zone = "b"
		n.Nodes = n.Nodes.With(svcfixture.NodeName, &moved)
	}, ch)
	check("this node moved to zone b", "10.1.1.3:8080")
}
