package cluster_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

// TestRestart kills nfrouter on a node (SIGKILL, as a crash would) and starts
// it again while probes run: allowed traffic must never be refused, denied
// traffic never let through, and the new process must converge on the table
// it finds without deleting or rewriting anything.
func TestRestart(t *testing.T) {
	bed := startBed(t, 2)
	ctx := ctxTimeout(t, 10*time.Minute)
	const ns = "restart"
	if err := bed.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	ports := cluster.WebPorts[:1]
	pod := func(name, node, app string) *cluster.Pod {
		p, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: ns, Name: name, Node: node, Labels: map[string]string{"app": app}, Ports: ports})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := pod("srv-1", "node-1", "srv")
	cliLocal, cliRemote := pod("cli-1", "node-1", "cli"), pod("cli-2", "node-2", "cli")
	oth := pod("oth-2", "node-2", "oth")
	if err := bed.ApplyPolicy(ctx, cluster.AllowFrom(ns, "srv", "srv", "cli", intstr.FromString("http"))); err != nil {
		t.Fatal(err)
	}
	routers := startRouters(t, bed)
	cases := []cluster.ProbeCase{
		{From: cliLocal, To: srv, Protocol: "tcp", Port: 8080, Want: true},
		{From: cliRemote, To: srv, Protocol: "tcp", Port: 8080, Want: true},
		{From: oth, To: srv, Protocol: "tcp", Port: 8080, Want: false},
	}
	if res, err := cluster.WaitMatrix(ctx, cases, 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, cluster.FormatMatrix(res))
	}

	// Probe without pause until told to stop; count every wrong answer.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var probes, wrong atomic.Int64
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := c.From.Probe(c.Protocol, c.To.IP, c.Port, 500*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				probes.Add(1)
				if got != c.Want {
					wrong.Add(1)
					t.Errorf("during restart: %s connected=%v, want %v", c, got, c.Want)
				}
			}
		}()
	}

	old := routers[0]
	old.Kill()
	node := bed.Nodes[0]
	began := time.Now()
	r, err := bed.StartNFRouter(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitHealthy(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	healthy := time.Since(began)
	// Keep probing across the new process's first syncs.
	waitMetric(t, ctx, r, "a firewall sync", func(m cluster.Metrics) bool {
		return m.Sum("nfrouter_syncs_total", `backend="nftables"`, `result="ok"`) >= 1
	})
	close(stop)
	wg.Wait()
	t.Logf("restart on %s: healthy after %s; %d probes during restart, %d wrong", node.Name, healthy.Round(time.Millisecond), probes.Load(), wrong.Load())

	m, err := r.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"deltable", "delchain", "delrule", "delset", "delsetelem"} {
		if n := m.Sum("nfrouter_nft_netlink_messages_total", `type="`+typ+`"`); n != 0 {
			t.Errorf("restarted nfrouter sent %v %s messages; want 0 (converge without flushing)", n, typ)
		}
	}
	if n := m.Sum("nfrouter_nft_chains_rewritten_total"); n != 0 {
		t.Errorf("restarted nfrouter rewrote %v chains; want 0", n)
	}
	t.Logf("restarted nfrouter: %s", cluster.SummaryOf(node.Name, m, 0, 0))
	if res, err := cluster.WaitMatrix(ctx, cases, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, cluster.FormatMatrix(res))
	}
	if n, calls, err := r.Execs(); err != nil || n != 0 {
		t.Errorf("restarted nfrouter: execve %d (%v), err %v", n, calls, err)
	}
}
