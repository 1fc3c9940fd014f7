package nft

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
)

// TestKernelBridge runs the firewall over pods on kube-bridge: bridged
// traffic between pods of one node reaches the policy chains only through
// br_netfilter, so the firewall must turn on bridge-nf-call-ip(6)tables in
// the node namespace (the test turns them off first). x/a takes TCP and UDP
// from x/b only; everything else is open.
func TestKernelBridge(t *testing.T) {
	kerneltest.RequireRoot(t)
	node := netnstest.NewBridgeNode(t, netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:1::/64"))
	if err := setSysctls(node, "0"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			kerneltest.MissingFeature(t, "br_netfilter", err)
		}
		t.Fatal(err)
	}
	st := fixture.New()
	pods := map[string]*netnstest.Pod{}
	names := []string{"x/a", "x/b", "x/c", "y/a"}
	for i, key := range names {
		ns, name, _ := strings.Cut(key, "/")
		st.Namespaces = st.Namespaces.With(ns, &model.Namespace{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}})
		ips := []netip.Addr{netip.AddrFrom4([4]byte{10, 244, 1, byte(10 + i)}), netip.AddrFrom16([16]byte{0: 0xfd, 3: 1, 15: byte(10 + i)})}
		p := node.AddPod(key, ips...)
		p.Serve(t, "tcp", 80)
		p.Serve(t, "udp", 80)
		pods[key] = p
		st.Pods = st.Pods.With(model.PodKey{Namespace: ns, Name: name}, &model.Pod{Namespace: ns, Name: name, Node: "node-a", IPs: ips,
			Labels: map[string]string{"pod": name}})
	}
	if err := st.Apply([]byte(`
kind: NetworkPolicy
metadata: {name: a-from-b, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{podSelector: {matchLabels: {pod: b}}}]}]`)); err != nil {
		t.Fatal(err)
	}
	f := newFirewallIn(t, node.NS, false)
	syncOK(t, f, st.State, &model.Changes{Full: true})

	for _, f := range bridgeNFSysctls {
		var got []byte
		err := kerneltest.Do(node.NS, func() (err error) { got, err = os.ReadFile(f); return err })
		if err != nil || strings.TrimSpace(string(got)) != "1" {
			t.Errorf("%s in the node namespace = %q, %v; want 1", f, got, err)
		}
	}
	var cases []netnstest.ProbeCase
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			want := to != "x/a" || from == "x/b"
			for _, dst := range pods[to].IPs {
				for _, proto := range []string{"tcp", "udp"} {
					cases = append(cases, netnstest.ProbeCase{From: pods[from], To: dst, ToName: to, Protocol: proto, Port: 80, Want: want})
				}
			}
		}
	}
	netnstest.RunProbes(t, cases)
}

// setSysctls writes v to the bridge-nf-call sysctls of the node namespace.
func setSysctls(node *netnstest.Node, v string) error {
	return kerneltest.Do(node.NS, func() error {
		for _, f := range bridgeNFSysctls {
			if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}
