package bgp

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// TestBIRDInterop peers two nodes with BIRD 2 as the upstream router (ASN
// 65000). BIRD must learn each node's pod CIDR via that node and the
// advertised VIPs; the nodes must install BIRD's route to 192.0.2.0/24 and
// refuse its route to node2's pod CIDR (import policy: cluster prefixes are
// never taken from external routers).
func TestBIRDInterop(t *testing.T) {
	kerneltest.RequireRoot(t)
	requireBIRD(t)
	m := newMesh(t, 2)
	n1, n2 := m.nodes[0], m.nodes[1]
	upstream := netip.MustParseAddr("10.0.0.254")
	birdNS := kerneltest.NewNetNS(t)
	plug(t, m.sw, "portbird", birdNS, netip.PrefixFrom(upstream, 24))

	show := startBIRD(t, birdNS, `router id 10.0.0.254;
protocol device {}
protocol static { ipv4; route 192.0.2.0/24 unreachable; route 10.244.2.0/24 unreachable; }
template bgp node { local 10.0.0.254 as 65000; ipv4 { import all; export all; }; }
protocol bgp n1 from node { neighbor 10.0.0.1 as 64512; }
protocol bgp n2 from node { neighbor 10.0.0.2 as 64512; }
`)

	svc := &model.ServicePort{Key: model.ServicePortKey{Namespace: "ns", Name: "web", Protocol: model.TCP}, Port: 80,
		ClusterIPs: addrs("10.96.0.10"), LoadBalancerIPs: addrs("198.51.100.5"), ExternalTrafficLocal: true}
	m.state.Services = []*model.ServicePort{svc}
	m.state.Endpoints = []childEndpoints{{Key: svc.Key, Endpoints: localEndpoint("node2")}}
	cfg := childConfig{PeerRouters: []ExternalPeer{{Addr: upstream, ASN: 65000}}, AdvertiseClusterIP: true, AdvertiseLBIP: true}
	for _, n := range m.nodes {
		m.start(n, cfg)
	}
	via := func(prefix string, hops ...string) func() bool { return birdVia(show, prefix, hops...) }
	waitFor(t, 30*time.Second, "BIRD learns node1's pod CIDR via node1", via("10.244.1.0/24", "10.0.0.1"))
	waitFor(t, 30*time.Second, "BIRD learns the cluster IP via both nodes", via("10.96.0.10/32", "10.0.0.1", "10.0.0.2"))
	waitFor(t, 30*time.Second, "BIRD learns the Local LB IP via node2", via("198.51.100.5/32", "10.0.0.2"))
	if out := show("198.51.100.5/32"); strings.Contains(out, "via 10.0.0.1") {
		t.Errorf("node1 advertised a Local VIP without a local endpoint:\n%s", out)
	}
	if out := show("10.244.2.0/24"); strings.Contains(out, "via 10.0.0.1") {
		t.Errorf("node1 re-advertised node2's pod CIDR to BIRD:\n%s", out)
	}
	waitFor(t, 30*time.Second, "node1 installs BIRD's route", func() bool {
		return n1.hasRoute(t, netip.MustParsePrefix("192.0.2.0/24"), upstream)
	})
	// Until the session between the nodes is up, node1 has no route to
	// node2's pod CIDR: BIRD's path to it must never stand in.
	if !tryFor(30*time.Second, func() bool { return n1.hasRoute(t, n2.cidr, n2.addr) }) {
		t.Errorf("node1 routes node2's pod CIDR elsewhere than via node2: %v", n1.ourRoutes(t)[n2.cidr])
	}
	if !n1.pod.Probe(t, "tcp", n2.pod.IPs[0], 8080) {
		t.Error("pods do not reach each other")
	}
}

// requireBIRD skips the test when bird and birdc are not installed.
func requireBIRD(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if kerneltest.InGuest() {
				// The VM tier brings no bird (it is not in testdata/vm-tools):
				// the tests need nothing of the guest kernels that the host lacks.
				t.Skip("bird is not in VM guests; the BIRD tests run on the host")
			}
			t.Skip("bird (Debian bird2) not installed; make setup installs it")
		}
	}
}

// startBIRD runs bird with conf inside ns until the test ends and returns a
// function that shows BIRD's routes for a prefix ("birdc show route PREFIX
// all").
func startBIRD(t *testing.T, ns netns.NsHandle, conf string) func(prefix string) string {
	t.Helper()
	bird, _ := exec.LookPath("bird")
	birdc, _ := exec.LookPath("birdc")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bird.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "bird.ctl")
	cmd := exec.Command(bird, "-f", "-c", filepath.Join(dir, "bird.conf"), "-s", sock)
	cmd.Stderr = os.Stderr
	if err := kerneltest.Do(ns, cmd.Start); err != nil {
		t.Fatalf("start bird: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return func(prefix string) string {
		out, _ := exec.Command(birdc, "-s", sock, "show", "route", prefix, "all").CombinedOutput()
		return string(out)
	}
}

// birdVia returns a condition: BIRD has routes for prefix via every hop.
func birdVia(show func(string) string, prefix string, hops ...string) func() bool {
	return func() bool {
		out := show(prefix)
		for _, h := range hops {
			if !strings.Contains(out, "via "+h) {
				return false
			}
		}
		return true
	}
}
