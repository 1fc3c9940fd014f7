package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// startNodes starts a 2-node cluster with nfrouter's image and the test
// server's imported, or skips when the machine cannot run one.
func startNodes(t *testing.T) (*Cluster, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip("node tier: " + err.Error())
	}
	cache := os.Getenv("NFROUTER_CLUSTER_CACHE")
	nfrouterImage := os.Getenv("NFROUTER_IMAGE_TAR")
	if cache == "" || nfrouterImage == "" {
		t.Skip("NFROUTER_CLUSTER_CACHE or NFROUTER_IMAGE_TAR not set (make test-node sets them)")
	}
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	bins, err := cluster.EnsureBinaries(ctx, "../cluster/tools", cache, os.Stderr, log)
	if err != nil {
		t.Fatal(err)
	}
	images := t.TempDir()
	pause, err := BuildImage(ctx, images, "pause", PauseRef, "github.com/nfrouter/nfrouter/integration/node/cmd/pause")
	if err != nil {
		t.Fatal(err)
	}
	server, err := BuildImage(ctx, images, "testserver", TestServerRef, "github.com/nfrouter/nfrouter/integration/node/cmd/testserver")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, Config{Binaries: bins, Nodes: 2, PauseImage: pause, Progress: testWriter{t}, Log: log,
		KeepDir: os.Getenv("NFROUTER_NODE_KEEP") != ""})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := c.Kubectl(context.Background(), "get", "pods", "-A", "-o", "wide"); err == nil {
				t.Logf("pods:\n%s", out)
			}
			t.Logf("logs are in %s (removed unless NFROUTER_NODE_KEEP is set)", c.Dir())
		}
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	for _, a := range []string{nfrouterImage, server} {
		if err := c.ImportImage(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	return c, nfrouterImageRef()
}

func nfrouterImageRef() string {
	if r := os.Getenv("NFROUTER_IMAGE"); r != "" {
		return r
	}
	return "nfrouter:dev"
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestNodes is the user's path: deploy/ applied through kustomize onto two
// kubelet nodes with no kube-proxy and no other CNI, then real workloads.
func TestNodes(t *testing.T) {
	c, ref := startNodes(t)
	ctx := t.Context()
	client := c.Client()

	begin := time.Now()
	overlay, err := WriteDeployOverlay(t.TempDir(), "../../deploy", ref)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Kubectl(ctx, "apply", "-k", overlay); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("kubectl apply -k:\n%s", out)
	}
	waitFor(t, "nodes Ready and nfrouter's DaemonSet Ready on each", 3*time.Minute, func() (bool, string) {
		return nodesAndDaemonSetReady(ctx, client, "kube-system", "nfrouter", len(c.Nodes))
	})
	t.Logf("nodes and DaemonSet Ready %s after apply", time.Since(begin).Round(time.Second))
	waitFor(t, "BGP routes to every other node's pod CIDR", time.Minute, func() (bool, string) {
		return podRoutes(ctx, c)
	})

	ns := "nodes-test"
	mustCreate(t, func() error {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	})
	for _, role := range []string{"client", "stranger"} {
		mustCreate(t, func() error {
			_, err := client.AppsV1().DaemonSets(ns).Create(ctx, daemonSet(role), metav1.CreateOptions{})
			return err
		})
	}
	mustCreate(t, func() error {
		_, err := client.AppsV1().Deployments(ns).Create(ctx, deployment(10), metav1.CreateOptions{})
		return err
	})
	var clusterIP string
	var nodePort int
	for _, svc := range []*corev1.Service{service("server", corev1.ServiceTypeClusterIP), service("server-np", corev1.ServiceTypeNodePort)} {
		mustCreate(t, func() error {
			created, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
			if err == nil && created.Spec.Type == corev1.ServiceTypeNodePort {
				nodePort = int(created.Spec.Ports[0].NodePort)
			} else if err == nil {
				clusterIP = created.Spec.ClusterIP
			}
			return err
		})
	}
	waitFor(t, "test server rolled out (10 ready)", 3*time.Minute, func() (bool, string) {
		return rolledOut(ctx, client, ns, "server")
	})
	for _, role := range []string{"client", "stranger"} {
		waitFor(t, role+" DaemonSet Ready", time.Minute, func() (bool, string) {
			return nodesAndDaemonSetReady(ctx, client, ns, role, len(c.Nodes))
		})
	}
	clients := podSources(t, c, ns, "role=client")
	strangers := podSources(t, c, ns, "role=stranger")
	spread := serverSpread(t, client, ns)
	t.Logf("test server pods per node: %v", spread)
	if len(spread) != len(c.Nodes) {
		t.Fatalf("test server pods on %d nodes, want %d: %v", len(spread), len(c.Nodes), spread)
	}

	// What every probe asks: the ClusterIP, and the NodePort on each node.
	targets := []string{net.JoinHostPort(clusterIP, "80")}
	for _, n := range c.Nodes {
		targets = append(targets, net.JoinHostPort(n.IP.String(), strconv.Itoa(nodePort)))
	}
	var sources []source
	sources = append(sources, clients...)
	for _, n := range c.Nodes {
		sources = append(sources, source{name: n.Name, ns: n.NS})
	}
	waitFor(t, "services answer from every client pod and node", time.Minute, func() (bool, string) {
		for _, s := range sources {
			for _, dst := range targets {
				if _, err := httpGet(s.ns, dst, 2*time.Second); err != nil {
					return false, fmt.Sprintf("%s -> %s: %v", s.name, dst, err)
				}
			}
		}
		return true, ""
	})

	// Probe throughout two rollouts: every request from every source must be
	// answered; new pods must answer too.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]probeStats, len(sources)*len(targets))
	for i, s := range sources {
		for j, dst := range targets {
			wg.Add(1)
			go func(st *probeStats) {
				defer wg.Done()
				st.run(s, dst, stop)
			}(&results[i*len(targets)+j])
		}
	}
	for roll := 1; roll <= 2; roll++ {
		start := time.Now()
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"nodes-test/roll":"%d"}}}}}`, roll)
		if _, err := client.AppsV1().Deployments(ns).Patch(ctx, "server", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("rollout %d", roll), 3*time.Minute, func() (bool, string) {
			return rolledOut(ctx, client, ns, "server")
		})
		t.Logf("rollout %d done in %s", roll, time.Since(start).Round(100*time.Millisecond))
	}
	close(stop)
	wg.Wait()
	answered := map[string]bool{}
	for i, st := range results {
		s, dst := sources[i/len(targets)], targets[i%len(targets)]
		t.Logf("%s -> %s: %d answered, %d failed, %d distinct pods", s.name, dst, st.ok, len(st.failures), len(st.names))
		for _, f := range st.failures {
			t.Errorf("%s -> %s during rollouts: %s", s.name, dst, f)
		}
		if st.ok == 0 {
			t.Errorf("%s -> %s: no request answered", s.name, dst)
		}
		for n := range st.names {
			answered[n] = true
		}
	}
	// 10 pods before, 10 after each rollout.
	if len(answered) <= 10 {
		t.Errorf("%d distinct pods answered through the rollouts; want more than the first 10", len(answered))
	}

	// The API server reaches kubelets (what kubectl exec and upstream's e2e
	// suites need).
	if out, err := c.Kubectl(ctx, "exec", "-n", ns, strings.Split(clients[0].name, "@")[0], "--", "/testserver", "-h"); err != nil {
		t.Errorf("kubectl exec: %v", err)
	} else if !strings.Contains(string(out), "-drain") {
		t.Errorf("kubectl exec: unexpected output %q", out)
	}

	testNetworkPolicy(t, c, ns, clients, strangers)
	checkNFRouter(t, c)
}

// testNetworkPolicy admits only client pods to the test server and checks
// that client pods on both nodes still reach every server pod while the
// stranger pods, which could before, no longer do.
func testNetworkPolicy(t *testing.T, c *Cluster, ns string, clients, strangers []source) {
	ctx := t.Context()
	client := c.Client()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=server"})
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			servers = append(servers, net.JoinHostPort(p.Status.PodIP, "8080"))
		}
	}
	// Every source to every server at once: a refused probe costs its
	// whole timeout.
	reach := func(srcs []source, want bool) (bool, string) {
		var mu sync.Mutex
		var wrong []string
		var wg sync.WaitGroup
		for _, s := range srcs {
			for _, dst := range servers {
				wg.Go(func() {
					_, err := httpGet(s.ns, dst, time.Second)
					if (err == nil) != want {
						mu.Lock()
						wrong = append(wrong, fmt.Sprintf("%s -> %s: err=%v, want reachable=%v", s.name, dst, err, want))
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		return len(wrong) == 0, strings.Join(wrong, "; ")
	}
	waitFor(t, "strangers reach the server pods before the policy", 30*time.Second, func() (bool, string) { return reach(strangers, true) })
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "server-from-clients"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
			}},
		},
	}
	if _, err := client.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, "strangers refused by the policy", 30*time.Second, func() (bool, string) { return reach(strangers, false) })
	t.Logf("policy enforced on %d server pods %s after create", len(servers), time.Since(start).Round(10*time.Millisecond))
	if ok, why := reach(clients, true); !ok {
		t.Errorf("client pods refused under the policy: %s", why)
	}
}

// checkNFRouter scrapes each node's nfrouter: syncs happened and none
// failed; and its log says that starting processes was forbidden.
func checkNFRouter(t *testing.T, c *Cluster) {
	for _, n := range c.Nodes {
		body, err := httpGetPath(n.NS, net.JoinHostPort(n.IP.String(), "20241"), "/metrics", 5*time.Second)
		if err != nil {
			t.Errorf("%s: metrics: %v", n.Name, err)
			continue
		}
		var ok, failed float64
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "nfrouter_syncs_total{") {
				continue
			}
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if strings.Contains(line, `result="error"`) {
				failed += v
			} else {
				ok += v
			}
		}
		t.Logf("%s: nfrouter syncs ok %v, error %v", n.Name, ok, failed)
		if ok == 0 || failed != 0 {
			t.Errorf("%s: nfrouter_syncs_total ok=%v error=%v; want ok > 0 and no error", n.Name, ok, failed)
		}
	}
	// The log through the API server and the kubelet (as kubectl logs).
	pods, err := c.Client().CoreV1().Pods("kube-system").List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nfrouter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(c.Nodes) {
		t.Errorf("%d nfrouter pods, want %d", len(pods.Items), len(c.Nodes))
	}
	for _, p := range pods.Items {
		// A restart would also have reset the counters read above.
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount != 0 {
				t.Errorf("%s: %s restarted %d times", p.Spec.NodeName, p.Name, st.RestartCount)
			}
		}
		log, err := c.Client().CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			t.Errorf("%s: logs of %s: %v", p.Spec.NodeName, p.Name, err)
			continue
		}
		if !strings.Contains(string(log), "Starting processes is forbidden by seccomp") {
			t.Errorf("%s: %s's log lacks the forbid-exec line:\n%s", p.Spec.NodeName, p.Name, log)
		}
	}
}

func nodesAndDaemonSetReady(ctx context.Context, client kubernetes.Interface, ns, name string, nodes int) (bool, string) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	var ready []string
	for _, n := range list.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	if len(ready) != nodes {
		return false, fmt.Sprintf("%d of %d nodes registered, Ready: %v", len(list.Items), nodes, ready)
	}
	ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	st := ds.Status
	if st.DesiredNumberScheduled != int32(nodes) || st.NumberReady != int32(nodes) || st.UpdatedNumberScheduled != int32(nodes) {
		return false, fmt.Sprintf("DaemonSet %s/%s: desired %d, ready %d, updated %d", ns, name, st.DesiredNumberScheduled, st.NumberReady, st.UpdatedNumberScheduled)
	}
	return true, ""
}

func rolledOut(ctx context.Context, client kubernetes.Interface, ns, name string) (bool, string) {
	d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	st, want := d.Status, *d.Spec.Replicas
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want || st.ReadyReplicas != want {
		return false, fmt.Sprintf("generation %d observed %d: replicas %d, updated %d, ready %d, available %d",
			d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
	}
	return true, ""
}

// podRoutes reports whether each node has a route to every other node's
// pod CIDR via that node: nothing but nfrouter's BGP mesh adds them.
func podRoutes(ctx context.Context, c *Cluster) (bool, string) {
	list, err := c.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	cidrs := map[string]string{} // node IP -> pod CIDR
	for _, n := range list.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				cidrs[a.Address] = n.Spec.PodCIDR
			}
		}
	}
	for _, n := range c.Nodes {
		h, err := netlink.NewHandleAt(n.NS)
		if err != nil {
			return false, err.Error()
		}
		routes, err := h.RouteList(nil, netlink.FAMILY_V4)
		h.Close()
		if err != nil {
			return false, err.Error()
		}
		for _, other := range c.Nodes {
			if other == n {
				continue
			}
			cidr := cidrs[other.IP.String()]
			if cidr == "" {
				return false, other.Name + " has no pod CIDR yet"
			}
			if !slices.ContainsFunc(routes, func(r netlink.Route) bool {
				return r.Dst != nil && r.Dst.String() == cidr && r.Gw.String() == other.IP.String()
			}) {
				return false, fmt.Sprintf("%s: no route to %s via %s", n.Name, cidr, other.IP)
			}
		}
	}
	return true, ""
}

// source is a network namespace requests come from: a pod's or a node's.
type source struct {
	name string
	ns   netns.NsHandle
}

// podSources opens the network namespaces of the running pods matching
// selector.
func podSources(t *testing.T, c *Cluster, ns, selector string) []source {
	pods, err := c.Client().CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for _, p := range pods.Items {
		i := slices.IndexFunc(c.Nodes, func(n *Node) bool { return n.Name == p.Spec.NodeName })
		if i < 0 {
			t.Fatalf("pod %s on unknown node %q", p.Name, p.Spec.NodeName)
		}
		h, err := c.Nodes[i].PodNetNS(string(p.UID))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		out = append(out, source{name: p.Name + "@" + p.Spec.NodeName, ns: h})
	}
	if len(out) != len(c.Nodes) {
		t.Fatalf("%d pods match %s, want one per node", len(out), selector)
	}
	return out
}

func serverSpread(t *testing.T, client kubernetes.Interface, ns string) map[string]int {
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=server"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		out[p.Spec.NodeName]++
	}
	return out
}

// probeStats counts one source's requests to one target.
type probeStats struct {
	ok       int
	failures []string
	names    map[string]bool
}

func (st *probeStats) run(s source, dst string, stop <-chan struct{}) {
	st.names = map[string]bool{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		name, err := httpGet(s.ns, dst, 2*time.Second)
		if err != nil {
			st.failures = append(st.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
			continue
		}
		st.ok++
		st.names[name] = true
	}
}

// httpGet asks the test server at addr from inside ns and returns its
// answer (the pod's name); one connection per request.
func httpGet(ns netns.NsHandle, addr string, timeout time.Duration) (string, error) {
	body, err := httpGetPath(ns, addr, "/", timeout)
	return strings.TrimSpace(body), err
}

func httpGetPath(ns netns.NsHandle, addr, path string, timeout time.Duration) (string, error) {
	var conn net.Conn
	err := kerneltest.Do(ns, func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	head, body, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok || !strings.Contains(head, " 200 ") {
		return "", fmt.Errorf("%s: bad answer %q", addr, head)
	}
	return body, nil
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := poll(t.Context(), timeout, 250*time.Millisecond, func() (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %s)", what, err, last)
	}
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

func labels(app string) map[string]string { return map[string]string{"app": app} }

func serverPod(lbls map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: lbls},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "server", Image: TestServerRef, ImagePullPolicy: corev1.PullNever,
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
			}},
			TerminationGracePeriodSeconds: ptr(int64(10)),
		},
	}
}

func deployment(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "server"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels("server")},
			Template: serverPod(labels("server")),
		},
	}
}

func daemonSet(role string) *appsv1.DaemonSet {
	lbls := map[string]string{"role": role}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: serverPod(lbls),
		},
	}
}

func service(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type: typ, Selector: labels("server"),
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

func ptr[T any](v T) *T { return &v }
