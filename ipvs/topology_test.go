package ipvs

import (
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

// TestTopologyPicksDestinations checks that the virtual services of policy
// Cluster get the endpoints topology picks for this node (zone a): zone a's
// while there are any, every one when none is left, zone b's when the node
// moves there; that policy Local keeps the local ones whatever the zone; and
// that a change of this node alone re-plans them.
func TestTopologyPicksDestinations(t *testing.T) {
	node := &model.Node{Name: thisNode, Zone: "a", InternalIPs: addrs("192.168.1.10")}
	hinted := func(spec, zone string) model.Endpoint {
		e := ep(spec, "rs")
		e.Zone, e.Hints = zone, &model.EndpointHints{ForZones: []string{zone}}
		return e
	}
	web := svc("default", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.NodePort = 30080 })
	local := svc("default", "local", 80, clusterIPs("10.96.0.30"), func(sp *model.ServicePort) {
		sp.NodePort = 30030
		sp.ExternalTrafficLocal = true
	})
	plain := svc("default", "plain", 80, clusterIPs("10.96.0.40")) // no NodePort
	eps := model.Endpoints{hinted("10.1.0.2:8080@"+thisNode, "a"), hinted("10.1.1.3:8080@node-b", "b"), hinted("10.1.2.4:8080@node-c", "a")}
	st := newState(node, []*model.ServicePort{web, local, plain},
		map[model.ServicePortKey]model.Endpoints{web.Key: eps, local.Key: eps, plain.Key: eps})
	p := NewPlanner(PlanConfig{NodeName: thisNode})
	check := func(step string, k VSKey, want ...string) {
		t.Helper()
		var got []string
		if vs := p.Service(k); vs != nil {
			for _, d := range vs.Dests {
				got = append(got, d.String())
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s sends to %v, want %v", step, k, got, want)
		}
	}
	webIP := VSKey{addrs("10.96.0.10")[0], model.TCP, 80}
	webNodePort := VSKey{addrs("192.168.1.10")[0], model.TCP, 30080}
	localIP := VSKey{addrs("10.96.0.30")[0], model.TCP, 80}
	localNodePort := VSKey{addrs("192.168.1.10")[0], model.TCP, 30030}
	plainIP := VSKey{addrs("10.96.0.40")[0], model.TCP, 80}

	p.Update(st, &model.Changes{Full: true})
	for _, k := range []VSKey{webIP, webNodePort, localIP, plainIP} {
		check("zone a", k, "10.1.0.2:8080", "10.1.2.4:8080")
	}
	check("zone a, policy Local", localNodePort, "10.1.0.2:8080")

	gone := slices.Clone(eps)
	gone[0].Ready, gone[2].Ready = false, false
	st.Endpoints = st.Endpoints.With(web.Key, gone)
	ch := &model.Changes{}
	ch.Endpoints.Add(web.Key)
	p.Update(st, ch)
	check("no ready endpoint in zone a", webIP, "10.1.1.3:8080")
	check("no ready endpoint in zone a", webNodePort, "10.1.1.3:8080")
	st.Endpoints = st.Endpoints.With(web.Key, eps)
	p.Update(st, ch)

	moved := *node
	moved.Zone = "b"
	st.Nodes = st.Nodes.With(thisNode, &moved)
	ch = &model.Changes{}
	ch.Nodes.Add(thisNode)
	p.Update(st, ch)
	check("moved to zone b", webIP, "10.1.1.3:8080")
	check("moved to zone b", localIP, "10.1.1.3:8080")
	check("moved to zone b", plainIP, "10.1.1.3:8080")
	check("moved to zone b, policy Local", localNodePort, "10.1.0.2:8080")
}
