package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol/netpoltest"
)

const explainManifests = "testdata/explain.yaml"

// explainJSON runs `nfrouter explain … -o json` and decodes its answer.
func explainJSON(t *testing.T, args ...string) explanation {
	t.Helper()
	code, stdout, stderr := runCommand(t, append([]string{"explain", "-o", "json"}, args...)...)
	if code != exitOK {
		t.Fatalf("explain %v: exit %d: %s", args, code, stderr)
	}
	var x explanation
	if err := json.Unmarshal([]byte(stdout), &x); err != nil {
		t.Fatalf("explain %v: %v\n%s", args, err, stdout)
	}
	return x
}

func TestExplainVerdictsAndPolicies(t *testing.T) {
	for _, tc := range []struct {
		from, to, port string
		family         string
		allowed        bool
		// policies as "namespace/name selects allows"
		policies []string
		// hooks of each node's path, as "node:hook:allowed"
		nodes []string
	}{
		{from: "app/client", to: "app/db", port: "5432/TCP", allowed: true,
			policies: []string{"app/client-to-db source true", "app/db-from-client destination true"},
			nodes:    []string{"node-1:forward:true", "node-2:forward:true"}},
		{from: "app/client", to: "app/db", port: "5432", family: "6", allowed: true,
			policies: []string{"app/client-to-db source true", "app/db-from-client destination true"},
			nodes:    []string{"node-1:forward:true", "node-2:forward:true"}},
		{from: "app/client", to: "app/db", port: "80/tcp", allowed: false,
			policies: []string{"app/client-to-db source true", "app/db-from-client destination false"},
			nodes:    []string{"node-1:forward:true", "node-2:forward:false"}},
		{from: "app/db", to: "app/client", port: "80", allowed: true,
			nodes: []string{"node-2:forward:true", "node-1:forward:true"}},
		{from: "app/client", to: "app/batch", port: "80", allowed: false,
			policies: []string{"app/client-to-db source false", "app/broken destination false"},
			nodes:    []string{"node-1:forward:false", "node-2:forward:false"}},
		{from: "10.244.1.5", to: "8.8.8.8", port: "53/UDP", allowed: true,
			policies: []string{"app/client-to-db source true"},
			nodes:    []string{"node-1:forward:true"}},
		{from: "app/client", to: "8.8.8.8", port: "53/TCP", allowed: false,
			policies: []string{"app/client-to-db source false"},
			nodes:    []string{"node-1:forward:false"}},
		// node-1's own traffic passes its output hook unjudged; node-2
		// judges it as any forwarded packet.
		{from: "192.168.50.11", to: "app/db", port: "5432", allowed: false,
			policies: []string{"app/db-from-client destination false"},
			nodes:    []string{"node-1:output:true", "node-2:forward:false"}},
		// A pod may always reach its own node.
		{from: "app/client", to: "192.168.50.11", port: "10250", allowed: true,
			policies: []string{"app/client-to-db source false"},
			nodes:    []string{"node-1:input:true"}},
		{from: "203.0.113.1", to: "198.51.100.1", port: "80", allowed: true},
	} {
		name := fmt.Sprintf("%s->%s:%s/v%s", tc.from, tc.to, tc.port, tc.family)
		t.Run(name, func(t *testing.T) {
			args := []string{"--manifests", explainManifests, "--from", tc.from, "--to", tc.to, "--port", tc.port}
			if tc.family != "" {
				args = append(args, "--family", tc.family)
			}
			x := explainJSON(t, args...)
			if x.Allowed != tc.allowed {
				t.Errorf("allowed %v, want %v", x.Allowed, tc.allowed)
			}
			var pols, nodes []string
			for _, p := range x.Policies {
				pols = append(pols, fmt.Sprintf("%s %s %v", p.Policy, p.Selects, p.Allows))
			}
			for _, n := range x.Nodes {
				nodes = append(nodes, fmt.Sprintf("%s:%s:%v", n.Node, n.Hook, n.Allowed))
			}
			if !slices.Equal(pols, tc.policies) {
				t.Errorf("policies %q, want %q", pols, tc.policies)
			}
			if !slices.Equal(nodes, tc.nodes) {
				t.Errorf("nodes %q, want %q", nodes, tc.nodes)
			}
			if tc.family == "6" && !x.From.IP.Is6() {
				t.Errorf("--family 6 judged %s", x.From.IP)
			}
		})
	}
}

// TestExplainTableNamesTheDecidingRules checks the human form: the verdict
// line, the policy table, and the path ending in the policy rule that
// accepted (or the drop).
func TestExplainTableNamesTheDecidingRules(t *testing.T) {
	code, out, stderr := runCommand(t, "explain", "--manifests", explainManifests, "--from", "app/client", "--to", "app/db", "--port", "5432")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"app/client -> app/db TCP/5432: ALLOWED\n",
		"app/db-from-client  destination (ingress)  yes",
		"Node node-2, hook forward: accepted",
		"# policy app/db-from-client",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runCommand(t, "explain", "--manifests", explainManifests, "--from", "app/client", "--to", "app/db", "--port", "80")
	if !strings.Contains(out, ": DENIED\n") || !strings.Contains(out, "Node node-2, hook forward: dropped") || !strings.HasSuffix(strings.TrimSpace(out), "drop") {
		t.Errorf("a denied connection's path does not end in the drop:\n%s", out)
	}
}

func TestExplainUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "a/b", "--to", "c/d"}, "--from, --to and --port are required"},
		{[]string{"--from", "a/b", "--to", "c/d", "--port", "80/ICMP"}, "protocol must be TCP, UDP or SCTP"},
		{[]string{"--from", "a/b", "--to", "c/d", "--port", "0"}, "port must be a number from 1 to 65535"},
		{[]string{"--from", "a/b", "--to", "c/d", "--port", "80", "-o", "yaml"}, "--output must be table or json"},
		{[]string{"--from", "a/b", "--to", "c/d", "--port", "80", "--manifests", "x", "--master", "y"}, "--manifests cannot be combined"},
	} {
		code, stdout, stderr := runCommand(t, append([]string{"explain"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	code, _, stderr := runCommand(t, "explain", "--manifests", explainManifests, "--from", "app/nobody", "--to", "app/db", "--port", "80")
	if code != exitFailure || !strings.Contains(stderr, "no pod app/nobody") {
		t.Errorf("unknown pod: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCommand(t, "explain", "--manifests", "../../deploy/examples", "--from", "shop/frontend-0", "--to", "10.96.0.80", "--port", "80")
	if code != exitFailure || !strings.Contains(stderr, "service shop/web") {
		t.Errorf("a service address: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCommand(t, "explain", "--help")
	if code != exitOK || !strings.Contains(stdout, "--from") || !strings.Contains(stdout, "namespace/name") {
		t.Errorf("explain --help: exit %d, %q", code, stdout)
	}
	code, stdout, _ = runCommand(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "\n  explain ") || !strings.Contains(stdout, "\n  denials ") {
		t.Errorf("--help does not list the subcommands: %q", stdout)
	}
}

// TestExplainAgreesWithTheE2ETruthTables asks explain about every probe of
// upstream's e2e truth tables (netpoltest.E2ECases: the kernel tests of
// package nft send each as a real packet and hold the kernel to the same
// answers), over IPv4 and IPv6, with the pods spread over three nodes so
// that a connection crosses two firewalls. The model is loaded from
// manifests the way the command loads it.
func TestExplainAgreesWithTheE2ETruthTables(t *testing.T) {
	nodes := []string{"node-a", "node-b", "node-c"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range netpoltest.E2ECases {
		t.Run(tc.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(e2eManifests(nodes)), 0o644); err != nil {
				t.Fatal(err)
			}
			policies := strings.ReplaceAll(tc.Policies, "kind: NetworkPolicy", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy")
			if err := os.WriteFile(filepath.Join(dir, "policies.yaml"), []byte(policies), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := loadModel(context.Background(), sourceOptions{manifests: dir}, log)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pods.Len() != len(netpoltest.Pods()) || st.Policies.Len() == 0 {
				t.Fatalf("manifests loaded %d pods and %d policies", st.Pods.Len(), st.Policies.Len())
			}
			e := newExplainer(st, false)
			probes, crossing := 0, 0
			for _, from := range netpoltest.Pods() {
				for _, to := range netpoltest.Pods() {
					if from == to {
						continue
					}
					for _, pp := range netpoltest.ProbePorts {
						for _, fam := range []int{4, 6} {
							x, err := e.explain(explainQuery{from: from, to: to, proto: pp.Protocol(), port: uint16(pp.Port), family: fam})
							if err != nil {
								t.Fatal(err)
							}
							probes++
							if len(x.Nodes) == 2 {
								crossing++
							}
							if want := tc.Want(from, to, pp.Proto, pp.Port); x.Allowed != want {
								t.Errorf("%s -> %s %s/%d IPv%d: explain says allowed=%v, want %v; policies %+v", from, to, pp.Proto, pp.Port, fam, x.Allowed, want, x.Policies)
							}
							if err := policiesAgree(x); err != nil {
								t.Errorf("%s -> %s %s/%d IPv%d: %v", from, to, pp.Proto, pp.Port, fam, err)
							}
						}
					}
				}
			}
			if probes != 9*8*4*2 || crossing == 0 || crossing == probes {
				t.Errorf("asked %d probes, %d across nodes; want %d, some within a node and some across", probes, crossing, 9*8*4*2)
			}
		})
	}
}

// policiesAgree checks that the policy list explains the verdict: allowed
// exactly when each isolated side has a policy that allows.
func policiesAgree(x *explanation) error {
	isolated := map[string]bool{}
	allows := map[string]bool{}
	for _, p := range x.Policies {
		isolated[p.Selects] = true
		allows[p.Selects] = allows[p.Selects] || p.Allows
	}
	want := (!isolated["source"] || allows["source"]) && (!isolated["destination"] || allows["destination"])
	if want != x.Allowed {
		return fmt.Errorf("the policies %+v say allowed=%v, the path says %v", x.Policies, want, x.Allowed)
	}
	return nil
}

// e2eManifests writes upstream's e2e cluster model as manifests, the pods
// spread over nodes in turn.
func e2eManifests(nodes []string) string {
	var b strings.Builder
	for _, ns := range netpoltest.Namespaces {
		n := netpoltest.Namespace(ns)
		labels, _ := json.Marshal(n.Labels)
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %q, labels: %s}\n---\n", ns, labels)
	}
	for i, key := range netpoltest.Pods() {
		p := netpoltest.Pod(key, nodes[i%len(nodes)])
		labels, _ := json.Marshal(p.Labels)
		var ports, ips []string
		for _, cp := range p.Ports {
			ports = append(ports, fmt.Sprintf("{name: %s, containerPort: %d, protocol: %s}", cp.Name, cp.Port, strings.ToUpper(cp.Protocol.String())))
		}
		for _, ip := range p.IPs {
			ips = append(ips, fmt.Sprintf("{ip: %q}", ip))
		}
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: %q, namespace: %q, labels: %s}\n"+
			"spec: {nodeName: %s, containers: [{name: serve, image: agnhost, ports: [%s]}]}\n"+
			"status: {phase: Running, podIP: %q, podIPs: [%s]}\n---\n",
			p.Name, p.Namespace, labels, p.Node, strings.Join(ports, ", "), p.IPs[0], strings.Join(ips, ", "))
	}
	return b.String()
}

// TestExplainReadsTheAPIServer loads the model through the agent's
// informers, from a fake API server, and explains from it.
func TestExplainReadsTheAPIServer(t *testing.T) {
	pod := func(name, node, ip string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: labels},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		pod("client", "node-1", "10.244.1.5", map[string]string{"role": "client"}),
		pod("db", "node-2", "10.244.2.7", map[string]string{"role": "db"}),
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db-from-client"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "db"}},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(5432))}},
				}},
			}},
	)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := loadModel(t.Context(), sourceOptions{client: client, cacheSyncTimeout: 10 * time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	e := newExplainer(st, false)
	for port, want := range map[uint16]bool{5432: true, 80: false} {
		x, err := e.explain(explainQuery{from: "app/client", to: "app/db", proto: model.TCP, port: port})
		if err != nil {
			t.Fatal(err)
		}
		if x.Allowed != want || len(x.Policies) != 1 || x.Policies[0].Policy != "app/db-from-client" {
			t.Errorf("port %d: allowed %v by %+v, want %v by app/db-from-client", port, x.Allowed, x.Policies, want)
		}
	}
}
