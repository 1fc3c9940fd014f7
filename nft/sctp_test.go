package nft

import (
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// TestKernelSCTP sends SCTP associations through a policy that allows SCTP
// port 80 to x/a from x/b only, over IPv4 and IPv6. The host kernel of the
// kernel tier has no SCTP sockets, so this runs in the VM tier.
func TestKernelSCTP(t *testing.T) {
	kerneltest.RequireRoot(t)
	c := newCluster(t, false)
	if err := netnstest.SCTPSupported(c.pods["x/a"]); err != nil {
		kerneltest.MissingFeature(t, "SCTP sockets", err)
	}
	for _, name := range c.names {
		c.pods[name].ServeSCTP(t, 80)
	}
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	c.setPolicies(t, `
kind: NetworkPolicy
metadata: {name: sctp-from-b, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{podSelector: {matchLabels: {pod: b}}}], ports: [{protocol: SCTP, port: 80}]}]`)
	for _, ip := range c.pods["x/a"].IPs {
		netnstest.RunProbes(t, []netnstest.ProbeCase{
			{From: c.pods["x/b"], To: ip, ToName: "x/a", Protocol: "sctp", Port: 80, Want: true},
			{From: c.pods["x/c"], To: ip, ToName: "x/a", Protocol: "sctp", Port: 80, Want: false},
			{From: c.pods["x/b"], To: ip, ToName: "x/a", Protocol: "tcp", Port: 80, Want: false},
		})
	}
	// Not selected: x/b takes SCTP from anyone.
	for _, ip := range c.pods["x/b"].IPs {
		netnstest.RunProbes(t, []netnstest.ProbeCase{
			{From: c.pods["x/c"], To: ip, ToName: "x/b", Protocol: "sctp", Port: 80, Want: true},
		})
	}
}
