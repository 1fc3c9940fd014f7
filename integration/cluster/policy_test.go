package cluster_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

// TestPolicyEndToEnd changes policies and labels across two nodes and checks
// the whole probe matrix after each change, measuring how long each change
// takes from the API write to the first packet that obeys it.
func TestPolicyEndToEnd(t *testing.T) {
	bed := startBed(t, 2)
	ctx := ctxTimeout(t, 10*time.Minute)
	const ns = "e2e"
	if err := bed.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	// 8080 http and 9090 grpc over TCP; 5353 over UDP, which no policy here
	// allows (their ports are TCP).
	ports := append(cluster.WebPorts[:2:2], corev1.ContainerPort{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP})
	pod := func(name, node, app string) *cluster.Pod {
		p, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: ns, Name: name, Node: node, Labels: map[string]string{"app": app}, Ports: ports})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv1, srv2 := pod("srv-1", "node-1", "srv"), pod("srv-2", "node-2", "srv")
	cli1, cli2 := pod("cli-1", "node-1", "cli"), pod("cli-2", "node-2", "cli")
	oth := pod("oth-2", "node-2", "oth")
	routers := startRouters(t, bed)

	// allowed says which (source, destination, port) connect in a state.
	type allowed func(from, to *cluster.Pod, port int) bool
	matrix := func(want allowed) []cluster.ProbeCase {
		var cs []cluster.ProbeCase
		for _, from := range []*cluster.Pod{cli1, cli2, oth} {
			for _, to := range []*cluster.Pod{srv1, srv2} {
				for _, p := range ports {
					port := int(p.ContainerPort)
					proto := strings.ToLower(string(p.Protocol))
					cs = append(cs, cluster.ProbeCase{From: from, To: to, Protocol: proto, Port: port, Want: want(from, to, port)})
				}
			}
		}
		return cs
	}
	isCli := func(p *cluster.Pod) bool { return p.Labels["app"] == "cli" }
	isSrv := func(p *cluster.Pod) bool { return p.Labels["app"] == "srv" }
	var policyPorts []int // nil: no policy
	state := func(from, to *cluster.Pod, port int) bool {
		if policyPorts == nil || !isSrv(to) {
			return true
		}
		return isCli(from) && (port == 8080 || (len(policyPorts) > 1 && port == 9090)) // never 5353/udp
	}
	check := func(step string) {
		t.Helper()
		res, err := cluster.WaitMatrix(ctx, matrix(state), 20*time.Second)
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, cluster.FormatMatrix(res))
		}
	}
	check("no policy")

	var latencies []time.Duration
	// step applies a change, measures the latency on probe (whose answer the
	// change flips), then checks the whole matrix.
	step := func(name string, change func() error, probe cluster.ProbeCase) {
		t.Helper()
		before, err := probe.From.Probe(probe.Protocol, probe.To.IP, probe.Port, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if before == probe.Want {
			t.Fatalf("%s: %s already connected=%v before the change", name, probe, before)
		}
		if err := change(); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		d, err := cluster.WaitEnforced(ctx, probe, written, 20*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		latencies = append(latencies, d)
		t.Logf("%-40s enforced after %s", name, d.Round(100*time.Microsecond))
		check(name)
	}
	http, grpc := intstr.FromString("http"), intstr.FromInt32(9090)

	step("policy: srv from cli on http", func() error {
		policyPorts = []int{8080}
		return bed.ApplyPolicy(ctx, cluster.AllowFrom(ns, "srv", "srv", "cli", http))
	}, cluster.ProbeCase{From: cli2, To: srv1, Protocol: "tcp", Port: 9090, Want: false})
	for range 5 {
		step("label oth-2 app=cli", func() error { return bed.Relabel(ctx, oth, "cli") },
			cluster.ProbeCase{From: oth, To: srv1, Protocol: "tcp", Port: 8080, Want: true})
		step("label oth-2 app=oth", func() error { return bed.Relabel(ctx, oth, "oth") },
			cluster.ProbeCase{From: oth, To: srv1, Protocol: "tcp", Port: 8080, Want: false})
	}
	step("policy: add port 9090", func() error {
		policyPorts = []int{8080, 9090}
		return bed.ApplyPolicy(ctx, cluster.AllowFrom(ns, "srv", "srv", "cli", http, grpc))
	}, cluster.ProbeCase{From: cli1, To: srv2, Protocol: "tcp", Port: 9090, Want: true})
	step("label srv-2 app=web (not selected)", func() error { return bed.Relabel(ctx, srv2, "web") },
		cluster.ProbeCase{From: oth, To: srv2, Protocol: "tcp", Port: 8080, Want: true})
	step("label srv-2 app=srv (selected again)", func() error { return bed.Relabel(ctx, srv2, "srv") },
		cluster.ProbeCase{From: oth, To: srv2, Protocol: "tcp", Port: 8080, Want: false})
	step("policy deleted", func() error {
		policyPorts = nil
		return bed.DeletePolicy(ctx, ns, "srv")
	}, cluster.ProbeCase{From: oth, To: srv1, Protocol: "tcp", Port: 9090, Want: true})
	t.Logf("event→enforced latency (API write returned → first probe obeying it): %s", cluster.Distribution(latencies))
	for _, r := range routers {
		m, err := r.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := m.Sum("nfrouter_event_to_sync_seconds_count", `backend="nftables"`)
		if n > 0 {
			t.Logf("%s: nfrouter's own event→programmed: %v syncs, mean %s", r.Node.Name, n,
				time.Duration(m.Sum("nfrouter_event_to_sync_seconds_sum", `backend="nftables"`)/n*float64(time.Second)).Round(10*time.Microsecond))
		}
	}
}
