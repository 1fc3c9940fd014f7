package bgp

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func svcPort(name string, mod func(*model.ServicePort)) *model.ServicePort {
	sp := &model.ServicePort{Key: model.ServicePortKey{Namespace: "ns", Name: name, Protocol: model.TCP}, Port: 80,
		ClusterIPs: addrs("10.96.0.10"), ExternalIPs: addrs("203.0.113.1"), LoadBalancerIPs: addrs("198.51.100.1")}
	if mod != nil {
		mod(sp)
	}
	return sp
}

func localEndpoint(node string) model.Endpoints {
	return model.Endpoints{{Addr: netip.MustParseAddr("10.244.1.5"), Port: 8080, Node: node,
		EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}}}
}

func TestServicePrefixes(t *testing.T) {
	all := AdvertiseFlags{ClusterIP: true, ExternalIP: true, LoadBalancerIP: true}
	tests := []struct {
		name     string
		flags    AdvertiseFlags
		sp       *model.ServicePort
		eps      model.Endpoints
		want     string
		problems int
	}{
		{name: "no flags", sp: svcPort("a", nil), want: "[]"},
		{name: "cluster IP flag", flags: AdvertiseFlags{ClusterIP: true}, sp: svcPort("a", nil), want: "[10.96.0.10/32]"},
		{name: "external IP flag", flags: AdvertiseFlags{ExternalIP: true}, sp: svcPort("a", nil), want: "[203.0.113.1/32]"},
		{name: "load-balancer IP flag", flags: AdvertiseFlags{LoadBalancerIP: true}, sp: svcPort("a", nil), want: "[198.51.100.1/32]"},
		{name: "all flags, dual stack", flags: all,
			sp:   svcPort("a", func(sp *model.ServicePort) { sp.ClusterIPs = addrs("10.96.0.10", "fd00:96::10") }),
			want: "[10.96.0.10/32 198.51.100.1/32 203.0.113.1/32 fd00:96::10/128]"},
		{name: "annotations switch on", sp: svcPort("a", func(sp *model.ServicePort) {
			sp.Options.AdvertiseClusterIP, sp.Options.AdvertiseExternalIP, sp.Options.AdvertiseLoadBalancerIP = "true", "true", "true"
		}), want: "[10.96.0.10/32 198.51.100.1/32 203.0.113.1/32]"},
		{name: "annotations switch off", flags: all, sp: svcPort("a", func(sp *model.ServicePort) {
			sp.Options.AdvertiseClusterIP, sp.Options.AdvertiseExternalIP, sp.Options.AdvertiseLoadBalancerIP = "false", "false", "false"
		}), want: "[]"},
		{name: "malformed annotation: flag applies", flags: AdvertiseFlags{ClusterIP: true},
			sp: svcPort("a", func(sp *model.ServicePort) { sp.Options.AdvertiseClusterIP = "yes" }), want: "[10.96.0.10/32]", problems: 1},
		{name: "external Local without local endpoint: external VIPs withheld", flags: all,
			sp: svcPort("a", func(sp *model.ServicePort) { sp.ExternalTrafficLocal = true }), eps: localEndpoint("n2"), want: "[10.96.0.10/32]"},
		{name: "external Local with local endpoint", flags: all,
			sp: svcPort("a", func(sp *model.ServicePort) { sp.ExternalTrafficLocal = true }), eps: localEndpoint("n1"),
			want: "[10.96.0.10/32 198.51.100.1/32 203.0.113.1/32]"},
		{name: "internal Local without local endpoint: cluster IP withheld", flags: all,
			sp: svcPort("a", func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }), want: "[198.51.100.1/32 203.0.113.1/32]"},
		{name: "service.local annotation withholds everything", flags: all,
			sp: svcPort("a", func(sp *model.ServicePort) { sp.Options.Local = true }), eps: localEndpoint("n2"), want: "[]"},
		{name: "terminating-only local endpoint does not count", flags: all,
			sp:  svcPort("a", func(sp *model.ServicePort) { sp.Options.Local = true }),
			eps: model.Endpoints{{Node: "n1", EndpointConditions: model.EndpointConditions{Serving: true, Terminating: true}}}, want: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := servicePrefixes("n1", tt.flags, tt.sp, tt.eps)
			if s := fmt.Sprint(got); s != tt.want {
				t.Errorf("prefixes = %s, want %s", s, tt.want)
			}
			if len(problems) != tt.problems {
				t.Errorf("problems = %v", problems)
			}
		})
	}
}

func TestAdvertiserIsIncremental(t *testing.T) {
	a := NewAdvertiser("n1", AdvertiseFlags{PodCIDR: true, ClusterIP: true})
	web, api := svcPort("web", nil), svcPort("api", func(sp *model.ServicePort) { sp.ClusterIPs = addrs("10.96.0.20") })
	webHTTPS := svcPort("web", func(sp *model.ServicePort) { sp.Key.Port = "https" }) // shares web's VIP
	state := &model.State{
		Nodes:        nodes(node("n1", "10.0.0.1", nil, "10.244.1.0/24")),
		ServicePorts: model.MapOf(map[model.ServicePortKey]*model.ServicePort{web.Key: web, api.Key: api, webHTTPS.Key: webHTTPS}),
	}
	step := func(name string, changes *model.Changes, want string) {
		t.Helper()
		d, _ := a.Update(state, changes)
		if got := fmt.Sprintf("+%v -%v", d.Add, d.Withdraw); got != want {
			t.Errorf("%s: delta %s, want %s", name, got, want)
		}
	}
	step("full", &model.Changes{Full: true}, "+[10.96.0.10/32 10.96.0.20/32 10.244.1.0/24] -[]")
	step("again", &model.Changes{Full: true}, "+[] -[]")

	// One service changes: only its path moves; the unchanged key set is not read.
	api2 := svcPort("api", func(sp *model.ServicePort) { sp.ClusterIPs = addrs("10.96.0.21") })
	state.ServicePorts = model.MapOf(map[model.ServicePortKey]*model.ServicePort{web.Key: web, api.Key: api2, webHTTPS.Key: webHTTPS})
	var ch model.Changes
	ch.ServicePorts.Add(api.Key)
	step("api moved", &ch, "+[10.96.0.21/32] -[10.96.0.20/32]")

	// One of two ports sharing a VIP goes: the path stays.
	state.ServicePorts = state.ServicePorts.Without(webHTTPS.Key)
	ch = model.Changes{}
	ch.ServicePorts.Add(webHTTPS.Key)
	step("shared VIP kept", &ch, "+[] -[]")
	state.ServicePorts = state.ServicePorts.Without(web.Key)
	ch = model.Changes{}
	ch.ServicePorts.Add(web.Key)
	step("last port gone", &ch, "+[] -[10.96.0.10/32]")

	// Endpoints of a Local service decide; an Endpoints change alone is enough.
	local := svcPort("loc", func(sp *model.ServicePort) { sp.ClusterIPs = addrs("10.96.0.30"); sp.InternalTrafficLocal = true })
	state.ServicePorts = state.ServicePorts.With(local.Key, local)
	ch = model.Changes{}
	ch.ServicePorts.Add(local.Key)
	step("local, no endpoint", &ch, "+[] -[]")
	state.Endpoints = model.MapOf(map[model.ServicePortKey]model.Endpoints{local.Key: localEndpoint("n1")})
	ch = model.Changes{}
	ch.Endpoints.Add(local.Key)
	step("local endpoint arrives", &ch, "+[10.96.0.30/32] -[]")

	// Pod CIDRs follow the node.
	state.Nodes = nodes(node("n1", "10.0.0.1", nil, "10.244.9.0/24"))
	step("pod CIDR changed", &model.Changes{}, "+[10.244.9.0/24] -[10.244.1.0/24]")
	if got := fmt.Sprint(a.Prefixes()); got != "[10.96.0.21/32 10.96.0.30/32 10.244.9.0/24]" {
		t.Errorf("prefixes = %s", got)
	}
}

func TestAdvertisePodCIDRFlag(t *testing.T) {
	a := NewAdvertiser("n1", AdvertiseFlags{})
	d, _ := a.Update(&model.State{Nodes: nodes(node("n1", "10.0.0.1", nil, "10.244.1.0/24"))}, &model.Changes{Full: true})
	if !d.Empty() {
		t.Errorf("--advertise-pod-cidr=false advertised %v", d.Add)
	}
}

// TestIgnoreFollowsIncrementalUpdates: after any sequence of model changes,
// the router's Ignore set, updated only for the prefixes of each update's
// deltas, is every VIP and every prefix the node originates.
func TestIgnoreFollowsIncrementalUpdates(t *testing.T) {
	r := &Router{adv: NewAdvertiser("n1", AdvertiseFlags{PodCIDR: true, ClusterIP: true, ExternalIP: true}),
		cluster: newClusterPrefixes(), env: RouteEnv{Ignore: map[netip.Prefix]bool{}}}
	rnd := rand.New(rand.NewPCG(1, 2))
	pick := func(pool ...string) []netip.Addr { return addrs(pool[rnd.IntN(len(pool))]) }
	random := func() *model.State {
		// A pod CIDR may be a VIP's /32 too, so that both sources share prefixes.
		st := &model.State{Nodes: nodes(node("n1", "10.0.0.1", nil, []string{"10.244.1.0/24", "10.96.0.1/32"}[rnd.IntN(2)]))}
		for _, name := range []string{"a", "b", "c"} {
			if rnd.IntN(4) == 0 {
				continue
			}
			sp := svcPort(name, func(sp *model.ServicePort) {
				sp.ClusterIPs = pick("10.96.0.1", "10.96.0.2", "fd00:96::1")
				sp.ExternalIPs, sp.LoadBalancerIPs = pick("203.0.113.1", "10.96.0.2"), nil
				sp.InternalTrafficLocal = rnd.IntN(2) == 0
			})
			st.ServicePorts = st.ServicePorts.With(sp.Key, sp)
			if rnd.IntN(2) == 0 {
				st.Endpoints = st.Endpoints.With(sp.Key, localEndpoint("n1"))
			}
		}
		return st
	}
	prev := &model.State{}
	for i := range 500 {
		next := random()
		changes := modeltest.ServiceChanges(prev, next)
		if i == 0 {
			changes = &model.Changes{Full: true}
		}
		delta, _ := r.adv.Update(next, changes)
		_, _, vipsChanged := r.cluster.update(next, changes)
		r.updateIgnore(delta.Add, delta.Withdraw, vipsChanged)
		want := map[netip.Prefix]bool{}
		for p := range r.cluster.vips {
			want[p] = true
		}
		for p := range r.adv.count {
			want[p] = true
		}
		if !maps.Equal(r.env.Ignore, want) {
			t.Fatalf("step %d: Ignore = %v, want %v", i, r.env.Ignore, want)
		}
		prev = next
	}
}
