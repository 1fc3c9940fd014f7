package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

// TestRBAC proves deploy/rbac.yaml grants exactly enough: with it nfrouter
// starts and hears about a fresh object of every kind it reads; without any
// one of its list or watch verbs it does not.
func TestRBAC(t *testing.T) {
	bed := startBed(t, 1)
	ctx := ctxTimeout(t, 10*time.Minute)
	node := bed.Nodes[0]
	// client-go streams the initial list over a watch (WatchListClient) when
	// the API server can; older API servers need list. Test the fallback, in
	// which both verbs are needed.
	bed.SetNFRouterEnv("KUBE_FEATURE_WatchListClient=false")
	roles := bed.Client().RbacV1().ClusterRoles()
	full, err := roles.Get(ctx, "nfrouter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{ // resource → the watch layer's kind label
		"pods": "Pod", "namespaces": "Namespace", "services": "Service", "nodes": "Node",
		"endpointslices": "EndpointSlice", "networkpolicies": "NetworkPolicy",
	}
	round := 0
	// works runs nfrouter under the current role and reports whether it
	// became healthy and saw a fresh object of every kind.
	works := func() (bool, string) {
		round++
		r, err := bed.StartNFRouter(ctx, node, "--cache-sync-timeout=3s")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Kill()
		if err := r.WaitHealthy(ctx, 10*time.Second); err != nil {
			return false, err.Error()
		}
		select {
		case <-r.Exited():
			t.Fatalf("nfrouter exited; another process answered its health check")
		default:
		}
		base, err := r.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := freshObjects(ctx, bed, fmt.Sprintf("rbac-%d", round)); err != nil {
			t.Fatal(err)
		}
		missing := func(m cluster.Metrics) []string {
			var out []string
			for _, k := range kinds {
				if m.Sum("nfrouter_watch_events_total", `kind="`+k+`"`) <= base.Sum("nfrouter_watch_events_total", `kind="`+k+`"`) {
					out = append(out, k)
				}
			}
			slices.Sort(out)
			return out
		}
		m, err := r.WaitMetrics(ctx, 5*time.Second, func(m cluster.Metrics) bool { return len(missing(m)) == 0 })
		if err != nil {
			if m == nil || ctx.Err() != nil { // a failed scrape, or the test's time is up
				t.Fatal(err)
			}
			return false, fmt.Sprintf("no events for %v", missing(m))
		}
		// A reflector whose watch is forbidden relists after a backoff and
		// so still delivers changes, late: any request the API server
		// refused counts as not working.
		log, err := os.ReadFile(r.Log())
		if err != nil {
			t.Fatal(err)
		}
		// The API server's refusal reads "<resource> is forbidden: User …"
		// (and the agent's own seccomp line says "forbidden" too).
		if bytes.Contains(log, []byte("is forbidden: ")) {
			return false, "requests forbidden (see " + r.Log() + ")"
		}
		return true, ""
	}
	if ok, why := works(); !ok {
		t.Fatalf("with deploy/rbac.yaml: %s", why)
	}
	for i, rule := range full.Rules {
		for _, res := range rule.Resources {
			if kinds[res] == "" {
				continue // events: written only when a policy fails to compile
			}
			for _, verb := range rule.Verbs {
				t.Run(res+" without "+verb, func(t *testing.T) {
					role := full.DeepCopy()
					role.ResourceVersion = ""
					role.Rules = dropVerb(role.Rules, i, res, verb)
					setRole(t, ctx, bed, role)
					defer setRole(t, ctx, bed, full.DeepCopy())
					if ok, _ := works(); ok {
						t.Errorf("nfrouter works without %s on %s: the ClusterRole grants more than it needs", verb, res)
					}
				})
			}
		}
	}
}

// dropVerb removes verb for resource res from rule i, keeping the rest.
func dropVerb(rules []rbacv1.PolicyRule, i int, res, verb string) []rbacv1.PolicyRule {
	r := rules[i]
	var keep []string
	for _, x := range r.Resources {
		if x != res {
			keep = append(keep, x)
		}
	}
	out := slices.Clone(rules[:i])
	if len(keep) > 0 {
		rest := *r.DeepCopy()
		rest.Resources = keep
		out = append(out, rest)
	}
	one := *r.DeepCopy()
	one.Resources = []string{res}
	one.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
	if len(one.Verbs) > 0 {
		out = append(out, one)
	}
	return append(out, rules[i+1:]...)
}

func setRole(t *testing.T, ctx context.Context, bed *cluster.Bed, role *rbacv1.ClusterRole) {
	t.Helper()
	roles := bed.Client().RbacV1().ClusterRoles()
	cur, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.ResourceVersion = cur.ResourceVersion
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// freshObjects makes one new object of every kind nfrouter reads (the
// EndpointSlice comes from kube-controller-manager, for the service).
func freshObjects(ctx context.Context, bed *cluster.Bed, ns string) error {
	c := bed.Client()
	if err := bed.CreateNamespace(ctx, ns, nil); err != nil {
		return err
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := bed.CreateService(ctx, cluster.ClusterIPService(ns, "s", "x")); err != nil {
		return err
	}
	if err := bed.ApplyPolicy(ctx, cluster.AllowFrom(ns, "np", "x", "y", intstr.FromInt32(80))); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{"round":%q}}}`, ns)
	_, err := c.CoreV1().Nodes().Patch(ctx, bed.Nodes[0].Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	return err
}
