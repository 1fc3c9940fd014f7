package nft

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// flow is a connection kept open across syncs: TCP to serveWeb's echo, or
// UDP to its name answer.
type flow struct {
	name string
	conn net.Conn
}

// openFlow connects pod to dst:port and checks one exchange.
func openFlow(t *testing.T, name string, pod *netnstest.Pod, protocol string, dst netip.Addr, port int) *flow {
	t.Helper()
	f := &flow{name: name}
	err := kerneltest.Do(pod.NS, func() (err error) {
		f.conn, err = net.DialTimeout(protocol, netip.AddrPortFrom(dst, uint16(port)).String(), netnstest.AllowedTimeout)
		return err
	})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { f.conn.Close() })
	if protocol == "tcp" {
		// serveWeb's greeting comes first.
		f.conn.SetReadDeadline(time.Now().Add(netnstest.AllowedTimeout))
		if _, err := f.conn.Read(make([]byte, 64)); err != nil {
			t.Fatalf("%s: greeting: %v", name, err)
		}
	}
	if err := f.exchange(netnstest.AllowedTimeout); err != nil {
		t.Fatalf("%s: first exchange: %v", name, err)
	}
	return f
}

// exchange sends a message on the open connection and waits for the
// answer: the echo over TCP, the server's name over UDP.
func (f *flow) exchange(timeout time.Duration) error {
	msg := []byte("ping")
	f.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := f.conn.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := f.conn.Read(buf)
	if err != nil {
		return err
	}
	if _, ok := f.conn.(*net.TCPConn); ok && !bytes.Equal(buf[:n], msg) {
		return fmt.Errorf("echo %q, want %q", buf[:n], msg)
	}
	return nil
}

// deletedFlows is how many conntrack entries node's firewall has deleted.
func (bed *pathsBed) deletedFlows(node string) int {
	return int(testutil.ToFloat64(bed.nodes[node].fw.flowsDeleted))
}

// testEstablishedFlows opens connections, then makes policies deny some of
// them: a denied connection stops within the sync that denies it, unless the
// firewall keeps established flows; an allowed one keeps going either way,
// and only the denied flows' conntrack entries are deleted.
func testEstablishedFlows(t *testing.T, mode string) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-established=%v", keep), func(t *testing.T) {
			bed := newPathsBed(t, mode, FirewallConfig{KeepEstablished: keep})
			client := bed.pods["x/client"]
			webA, webB := bed.pods["y/web-a"].IPs[0], bed.pods["y/web-b"].IPs[0]
			local := pathServices[0].clusterIP.of(false)
			toWebA := []*flow{
				openFlow(t, "client to web-a, TCP", client, "tcp", webA, webPortNumber),
				openFlow(t, "client to web-a, UDP", client, "udp", webA, webPortNumber),
				openFlow(t, "client to web-a through ClusterIP, TCP", client, "tcp", local, 80),
				openFlow(t, "client to web-a through ClusterIP, UDP", client, "udp", local, 80),
			}
			toWebB := openFlow(t, "client to web-b, TCP", client, "tcp", webB, webPortNumber)

			// A policy starts denying ingress to web-a.
			bed.setPolicies(t, `
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: deny-web-a, namespace: "y"}
spec:
  podSelector: {matchLabels: {pod: web-a}}
  policyTypes: [Ingress]
`)
			for _, f := range toWebA {
				err := f.exchange(netnstest.ProbeTimeout)
				if keep && err != nil {
					t.Errorf("%s: stopped although established flows are kept: %v", f.name, err)
				}
				if !keep && err == nil {
					t.Errorf("%s: still answered after the policy denying it was programmed", f.name)
				}
			}
			if err := toWebB.exchange(netnstest.AllowedTimeout); err != nil {
				t.Errorf("%s: allowed flow stopped: %v", toWebB.name, err)
			}
			want := len(toWebA)
			if keep {
				want = 0
			}
			if got := bed.deletedFlows("node-a"); got != want {
				t.Errorf("node-a deleted %d conntrack entries, want %d (the denied flows)", got, want)
			}
			if got := bed.deletedFlows("node-b"); got != 0 {
				t.Errorf("node-b deleted %d conntrack entries, want 0 (its flow stays allowed)", got)
			}

			// The client is relabelled out of what web-b admits.
			bed.setPolicies(t, `
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: clients-only, namespace: "y"}
spec:
  podSelector: {matchLabels: {pod: web-b}}
  ingress:
  - from: [{namespaceSelector: {}, podSelector: {matchLabels: {role: client}}}]
`)
			if err := toWebB.exchange(netnstest.AllowedTimeout); err != nil {
				t.Fatalf("%s: stopped while its client is admitted: %v", toWebB.name, err)
			}
			bed.relabel(t, model.PodKey{Namespace: "x", Name: "client"}, map[string]string{"role": "retired"})
			err := toWebB.exchange(netnstest.ProbeTimeout)
			if keep && err != nil {
				t.Errorf("%s: stopped although established flows are kept: %v", toWebB.name, err)
			}
			if !keep && err == nil {
				t.Errorf("%s: still answered after its client was relabelled out of the policy", toWebB.name)
			}
		})
	}
}

// relabel gives a pod new labels and syncs both nodes.
func (bed *pathsBed) relabel(t *testing.T, k model.PodKey, labels map[string]string) {
	t.Helper()
	next := bed.st.Clone()
	pod := *next.Pods.Get(k)
	pod.Labels = labels
	next.Pods = next.Pods.With(k, &pod)
	bed.st = next
	ch := &model.Changes{}
	ch.Pods.Add(k)
	bed.sync(t, ch)
}

// TestKernelDeniedEstablishedFlowsStop: nftables service proxy.
func TestKernelDeniedEstablishedFlowsStop(t *testing.T) {
	kerneltest.RequireRoot(t)
	testEstablishedFlows(t, "nftables")
}

// TestKernelDeniedEstablishedFlowsStopIPVS: IPVS service proxy (VM tier).
func TestKernelDeniedEstablishedFlowsStopIPVS(t *testing.T) {
	kerneltest.RequireRoot(t)
	testEstablishedFlows(t, "ipvs")
}
