package nft

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/nflog"
)

// TestKernelDeniedPacketIsLogged checks that a packet a policy drops reaches
// the deny chain's nflog group with its addresses and port and a prefix
// naming the direction and namespace, and is counted for that namespace.
func TestKernelDeniedPacketIsLogged(t *testing.T) {
	c := newCluster(t, false)
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	c.setPolicies(t, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-ingress, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  policyTypes: [Ingress]
`)
	log, err := nflog.Listen(netpol.NFLogGroup, int(c.node.NS))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	from, to := c.pods["y/b"], c.pods["x/a"]
	if from.Probe(t, "tcp", to.IPs[0], 80) {
		t.Fatal("probe y/b -> x/a tcp/80 passed a deny-all ingress policy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		pkt, err := log.Read(ctx)
		if err != nil {
			t.Fatalf("nflog: %v", err)
		}
		if pkt.Src != from.IPs[0] || pkt.Dst != to.IPs[0] || pkt.Proto != unix.IPPROTO_TCP || pkt.DPort != 80 {
			t.Logf("nflog: skipping logged packet %v -> %v proto %d port %d", pkt.Src, pkt.Dst, pkt.Proto, pkt.DPort)
			continue
		}
		if want := "nfrouter deny ingress x: "; pkt.Prefix != want {
			t.Errorf("nflog prefix %q, want %q", pkt.Prefix, want)
		}
		break
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.f.parts[0].(*Firewall).denied)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			denied[strings.Join(labels, ",")] = m.GetCounter().GetValue()
		}
	}
	if denied["direction=ingress,namespace=x"] < 1 {
		t.Errorf("nfrouter_firewall_denied_packets_total: %v, want x/ingress counted", denied)
	}
	if denied["direction=,namespace="] != 0 || len(denied) != 2 {
		t.Errorf("nfrouter_firewall_denied_packets_total: %v, want only x/ingress and the empty node-wide chain", denied)
	}
}
