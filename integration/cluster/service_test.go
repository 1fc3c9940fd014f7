package cluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

// TestServiceProxy reaches a ClusterIP service from a pod on each node while
// the pods behind it are replaced one after another, through nfrouter's
// nftables service proxy and its BGP routes. A replaced pod's network goes
// away right after it turns unready (the bed does not wait for a drain), so
// an attempt may meet it until nfrouter has removed it: a request is retried
// as a client would, the retries are counted and reported, and every request
// must be answered. Afterwards every backend must answer requests from each
// node (connections spread).
func TestServiceProxy(t *testing.T) {
	bed := startBed(t, 2)
	ctx := ctxTimeout(t, 10*time.Minute)
	const ns = "svc"
	if err := bed.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	var web, clients []*cluster.Pod
	for i := range 4 {
		p, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: ns, Name: fmt.Sprintf("web-%d", i),
			Node: bed.Nodes[i%len(bed.Nodes)].Name, Labels: map[string]string{"app": "web"}, Ports: cluster.WebPorts[:1]})
		if err != nil {
			t.Fatal(err)
		}
		web = append(web, p)
	}
	for _, n := range bed.Nodes {
		p, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: ns, Name: "client-" + n.Name, Node: n.Name,
			Labels: map[string]string{"app": "client"}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, p)
	}
	if err := bed.CreateService(ctx, cluster.ClusterIPService(ns, "web", "web")); err != nil {
		t.Fatal(err)
	}
	svc, err := bed.Client().CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr(svc.Spec.ClusterIP)
	port := int(svc.Spec.Ports[0].Port)
	startRouters(t, bed)
	if err := bed.WaitEndpoints(ctx, ns, "web", web, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// The first answer from each node: the service is programmed.
	for _, c := range clients {
		if _, err := waitAnswer(ctx, c, vip, port, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// Clients ask continuously while the pods are replaced. A request is
	// retried, every 50 ms, for up to requestBudget, as a client with
	// retries would.
	const requestBudget = 10 * time.Second
	type tally struct {
		requests, retried, failed int
		slowest                   time.Duration
	}
	results := make(chan tally, len(clients))
	stop := make(chan struct{})
	for _, c := range clients {
		go func() {
			var tl tally
			defer func() { results <- tl }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tl.requests++
				begin := time.Now()
				answered, err := askWithRetries(c, vip, port, requestBudget, &tl.retried)
				if err != nil {
					t.Error(err)
					return
				}
				if !answered {
					tl.failed++
				}
				tl.slowest = max(tl.slowest, time.Since(begin))
			}
		}()
	}
	const replacements = 12
	start := time.Now()
	for i := range replacements {
		j := i % len(web)
		p, err := bed.ReplacePod(ctx, web[j], fmt.Sprintf("web-%d", len(web)+i))
		if err != nil {
			close(stop)
			t.Fatal(err)
		}
		web[j] = p
	}
	churn := time.Since(start)
	if err := bed.WaitEndpoints(ctx, ns, "web", web, 30*time.Second); err != nil {
		t.Error(err)
	}
	close(stop)
	for range clients {
		tl := <-results
		t.Logf("during %d replacements (%s): %d requests, %d needed a retry, %d unanswered, slowest answered in %s",
			replacements, churn.Round(time.Millisecond), tl.requests, tl.retried, tl.failed, tl.slowest.Round(time.Millisecond))
		if tl.failed > 0 {
			t.Errorf("%d of %d requests to %s:%d were not answered within %s while pods churned", tl.failed, tl.requests, vip, port, requestBudget)
		}
	}

	// Spread: every current backend answers from each node. nfrouter may
	// still be programming the last replacement when the API shows it, so
	// the client asks (at least 100 times) until all have answered or 30 s
	// have passed.
	for _, c := range clients {
		var want []string
		for _, w := range web {
			want = append(want, w.Name)
		}
		seen := map[string]int{}
		missingOf := func() []string {
			var missing []string
			for _, w := range want {
				if seen[w] == 0 {
					missing = append(missing, w)
				}
			}
			return missing
		}
		requests := 0
		for deadline := time.Now().Add(30 * time.Second); requests < 100 || (len(missingOf()) > 0 && time.Now().Before(deadline)); requests++ {
			answer, err := waitAnswer(ctx, c, vip, port, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			seen[answer]++
		}
		missing := missingOf()
		for name := range seen {
			if !slices.Contains(want, name) {
				t.Errorf("%s: answered by %s, which was replaced", c.Name, name)
			}
		}
		t.Logf("%s -> %s:%d, %d requests: %v", c.Name, vip, port, requests, seen)
		if len(missing) > 0 {
			t.Errorf("%s: backends %s never answered %d requests", c.Name, strings.Join(missing, ", "), requests)
		}
	}
}

// askWithRetries connects from pod c to dst:port, retrying every 50 ms
// until some server answers or budget has passed, and counts a request that
// needed a retry in retried.
func askWithRetries(c *cluster.Pod, dst netip.Addr, port int, budget time.Duration, retried *int) (bool, error) {
	deadline := time.Now().Add(budget)
	retry := time.NewTicker(50 * time.Millisecond)
	defer retry.Stop()
	for attempt := 0; ; attempt++ {
		answer, err := c.Ask("tcp", dst, port, time.Second)
		if err != nil || answer != "" {
			return answer != "", err
		}
		if attempt == 0 {
			*retried++
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		<-retry.C
	}
}

// waitAnswer asks from pod c until some server answers or timeout passes.
func waitAnswer(ctx context.Context, c *cluster.Pod, dst netip.Addr, port int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		answer, err := c.Ask("tcp", dst, port, time.Second)
		if err != nil || answer != "" {
			return answer, err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("%s: no answer from %s:%d within %s", c.Name, dst, port, timeout)
		}
	}
}
