package svchealth

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
)

// loopback listens on a free loopback port for each health-check port the
// server asks for, and remembers where.
type loopback struct {
	t     *testing.T
	addrs map[string]string // asked address -> listening address
}

func (l *loopback) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l.addrs[address] = ln.Addr().String()
	return ln, nil
}

// get asks the health check of port and returns the status and the body.
func (l *loopback) get(port uint16) (int, answer, error) {
	addr, ok := l.addrs[fmt.Sprintf(":%d", port)]
	if !ok {
		return 0, answer{}, errors.New("no listener")
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return 0, answer{}, err
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return resp.StatusCode, a, err
	}
	if w := resp.Header.Get("X-Load-Balancing-Endpoint-Weight"); w != fmt.Sprint(a.LocalEndpoints) {
		return resp.StatusCode, a, fmt.Errorf("weight header %q, body count %d", w, a.LocalEndpoints)
	}
	return resp.StatusCode, a, nil
}

func TestHealthCheckNodePort(t *testing.T) {
	lb := &loopback{t: t, addrs: map[string]string{}}
	var proxyErr error
	s := New(Config{NodeName: "node-a", Listen: lb.listen, Healthy: func() error { return proxyErr }})
	t.Cleanup(s.Close)

	lbSvc := func(hc uint16, ports ...string) []*model.ServicePort {
		var out []*model.ServicePort
		for _, p := range ports {
			sp := modeltest.Svc("default", "web", 80, modeltest.ClusterIPs("10.96.0.10"), modeltest.Proto(model.TCP, p))
			sp.ExternalTrafficLocal, sp.HealthCheckNodePort = true, hc
			out = append(out, sp)
		}
		return out
	}
	httpKey := model.ServicePortKey{Namespace: "default", Name: "web", Port: "http", Protocol: model.TCP}
	httpsKey := model.ServicePortKey{Namespace: "default", Name: "web", Port: "https", Protocol: model.TCP}
	steps := []struct {
		name   string
		st     *model.State
		port   uint16
		status int // 0: nothing listens
		count  int
		down   bool // proxy unhealthy
	}{
		{name: "two local ready endpoints, one address on both ports counted once", port: 32000, status: 200, count: 2,
			st: modeltest.NewState(nil, lbSvc(32000, "http", "https"), map[model.ServicePortKey]model.Endpoints{
				httpKey:  {modeltest.Ep("10.1.0.2:8080@node-a", "rs"), modeltest.Ep("10.1.0.3:8080@node-a", "rs"), modeltest.Ep("10.1.1.2:8080@node-b", "rs")},
				httpsKey: {modeltest.Ep("10.1.0.2:8443@node-a", "rs")}})},
		{name: "local endpoints not ready: 503", port: 32000, status: 503, count: 0,
			st: modeltest.NewState(nil, lbSvc(32000, "http"), map[model.ServicePortKey]model.Endpoints{
				httpKey: {modeltest.Ep("10.1.0.2:8080@node-a", "st"), modeltest.Ep("10.1.1.2:8080@node-b", "rs")}})},
		{name: "ready again", port: 32000, status: 200, count: 1,
			st: modeltest.NewState(nil, lbSvc(32000, "http"), map[model.ServicePortKey]model.Endpoints{
				httpKey: {modeltest.Ep("10.1.0.2:8080@node-a", "rs")}})},
		{name: "proxy unhealthy: 503 with the count", port: 32000, status: 503, count: 1, down: true,
			st: modeltest.NewState(nil, lbSvc(32000, "http"), map[model.ServicePortKey]model.Endpoints{
				httpKey: {modeltest.Ep("10.1.0.2:8080@node-a", "rs")}})},
		{name: "port moved", port: 32001, status: 200, count: 1,
			st: modeltest.NewState(nil, lbSvc(32001, "http"), map[model.ServicePortKey]model.Endpoints{
				httpKey: {modeltest.Ep("10.1.0.2:8080@node-a", "rs")}})},
		{name: "service gone: nothing listens", port: 32001, st: modeltest.NewState(nil, nil, nil)},
	}
	prev := modeltest.NewState(nil, nil, nil)
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			proxyErr = nil
			if step.down {
				proxyErr = errors.New("nftables failing")
			}
			if err := s.Sync(t.Context(), step.st, modeltest.ServiceChanges(prev, step.st)); err != nil {
				t.Fatal(err)
			}
			prev = step.st
			status, a, err := lb.get(step.port)
			if step.status == 0 {
				if err == nil {
					t.Fatalf("port %d answered %d, want no listener", step.port, status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if status != step.status || a.LocalEndpoints != step.count || a.Service.Name != "web" || a.Service.Namespace != "default" ||
				a.ServiceProxyHealthy == step.down {
				t.Errorf("got %d %+v, want %d with %d local endpoints (proxy down %v)", status, a, step.status, step.count, step.down)
			}
		})
	}
}

// TestHealthCheckListensOnNodePortAddresses checks that with Addresses
// (--nodeport-addresses) a health check listens on exactly the node's
// addresses picked, and follows them when the node's addresses change.
func TestHealthCheckListensOnNodePortAddresses(t *testing.T) {
	lb := &loopback{t: t, addrs: map[string]string{}}
	cidrs := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}
	s := New(Config{NodeName: "node-a", Listen: lb.listen,
		Addresses: func(n *model.Node) []netip.Addr { return n.NodePortAddrs(false, cidrs) }})
	t.Cleanup(s.Close)
	if s.Kinds()&model.KindNodes == 0 {
		t.Error("Kinds leaves out nodes, whose addresses it listens on")
	}
	sp := modeltest.Svc("default", "web", 80, modeltest.ClusterIPs("10.96.0.10"))
	sp.ExternalTrafficLocal, sp.HealthCheckNodePort = true, 32000
	eps := map[model.ServicePortKey]model.Endpoints{sp.Key: {modeltest.Ep("10.1.0.2:8080@node-a", "rs")}}
	node := func(external string) *model.Node {
		return &model.Node{Name: "node-a", InternalIPs: modeltest.Addrs("192.168.1.10"), ExternalIPs: modeltest.Addrs(external)}
	}
	prev := modeltest.NewState(nil, nil, nil)
	for _, external := range []string{"203.0.113.10", "203.0.113.11"} {
		st := modeltest.NewState([]*model.Node{node(external)}, []*model.ServicePort{sp}, eps)
		ch := modeltest.ServiceChanges(prev, st)
		if err := s.Sync(t.Context(), st, ch); err != nil {
			t.Fatal(err)
		}
		prev = st
		want := []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr(external), 32000)}
		if got := slices.SortedFunc(maps.Keys(s.listeners), netip.AddrPort.Compare); !slices.Equal(got, want) {
			t.Errorf("node at %s: listening on %v, want %v", external, got, want)
		}
		if _, ok := lb.addrs[want[0].String()]; !ok {
			t.Errorf("node at %s: asked to listen on %v, want %s among them", external, slices.Collect(maps.Keys(lb.addrs)), want[0])
		}
	}
}
