package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// FieldReport is the scenario behind nfrouter (deploy/examples/field-report.yaml,
// scaled to a real cluster): web pods with three container ports spread over
// the nodes, a frontend allowed to reach them on http only by a
// NetworkPolicy, another pod allowed nothing, an unrelated ClusterIP service;
// the headless service in front of the web pods is created separately
// (CreateHeadless) so that its cost can be measured.
type FieldReport struct {
	Namespace string
	Web       []*Pod
	Frontend  *Pod
	Other     *Pod
	next      int // suffix of the next replacement's name
}

// SetupFieldReport creates the namespace shop, pods, service and policy,
// spreading the web pods over all nodes.
func (b *Bed) SetupFieldReport(ctx context.Context, replicas int) (*FieldReport, error) {
	return b.SetupFieldReportOn(ctx, "shop", b.Nodes, replicas)
}

// SetupFieldReportOn creates the field report in namespace ns on the given
// nodes: web pods round robin, the frontend on the last node, the other pod
// on the first. On one node it needs no pod routes between nodes.
func (b *Bed) SetupFieldReportOn(ctx context.Context, ns string, nodes []*Node, replicas int) (*FieldReport, error) {
	fr := &FieldReport{Namespace: ns}
	if err := b.CreateNamespace(ctx, fr.Namespace, map[string]string{"team": "shop"}); err != nil {
		return nil, err
	}
	last := nodes[len(nodes)-1].Name
	var err error
	if fr.Frontend, err = b.StartPod(ctx, PodSpec{Namespace: fr.Namespace, Name: "frontend-0", Node: last,
		Labels: map[string]string{"app": "frontend"}, Ports: WebPorts[:1]}); err != nil {
		return nil, err
	}
	if fr.Other, err = b.StartPod(ctx, PodSpec{Namespace: fr.Namespace, Name: "batch-0", Node: nodes[0].Name,
		Labels: map[string]string{"app": "batch"}}); err != nil {
		return nil, err
	}
	for i := range replicas {
		p, err := b.StartPod(ctx, PodSpec{Namespace: fr.Namespace, Name: fmt.Sprintf("web-%d", i),
			Node: nodes[i%len(nodes)].Name, Labels: map[string]string{"app": "web"}, Ports: WebPorts})
		if err != nil {
			return nil, err
		}
		fr.Web = append(fr.Web, p)
	}
	fr.next = replicas
	if err := b.CreateService(ctx, ClusterIPService(fr.Namespace, "frontend", "frontend")); err != nil {
		return nil, err
	}
	if err := b.ApplyPolicy(ctx, AllowFrom(fr.Namespace, "web-from-frontend", "web", "frontend", intstr.FromString("http"))); err != nil {
		return nil, err
	}
	return fr, nil
}

// CreateHeadless creates the headless service in front of the web pods.
func (fr *FieldReport) CreateHeadless(ctx context.Context, b *Bed) error {
	return b.CreateService(ctx, HeadlessService(fr.Namespace))
}

// Cases is the probe matrix: frontend and the other pod to every web pod on
// each port (frontend reaches http only, the other pod nothing), and the other
// pod to the frontend (no policy selects it: allowed).
func (fr *FieldReport) Cases() []ProbeCase {
	var cs []ProbeCase
	for _, w := range fr.Web {
		for _, port := range WebPorts {
			cs = append(cs,
				ProbeCase{From: fr.Frontend, To: w, Protocol: "tcp", Port: int(port.ContainerPort), Want: port.Name == "http"},
				ProbeCase{From: fr.Other, To: w, Protocol: "tcp", Port: int(port.ContainerPort), Want: false})
		}
	}
	return append(cs, ProbeCase{From: fr.Other, To: fr.Frontend, Protocol: "tcp", Port: 8080, Want: true})
}

// CasesFor is the part of Cases that concerns web pod w: what a replacement
// must have in place before it counts as done.
func (fr *FieldReport) CasesFor(w *Pod) []ProbeCase {
	var cs []ProbeCase
	for _, c := range fr.Cases() {
		if c.To == w {
			cs = append(cs, c)
		}
	}
	return cs
}

// Churn replaces web pods one at a time, round robin, n times, each in the
// eight writes of ReplacePod. every, when not nil, runs after each
// replacement.
func (fr *FieldReport) Churn(ctx context.Context, b *Bed, n int, every func(i int) error) error {
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := i % len(fr.Web)
		p, err := b.ReplacePod(ctx, fr.Web[j], fmt.Sprintf("web-%d", fr.next))
		if err != nil {
			return err
		}
		fr.next++
		fr.Web[j] = p
		if every != nil {
			if err := every(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitMatrix runs the probes until every one gives the wanted answer or
// timeout passes, and returns the last results. Convergence is what is
// waited for: nfrouter programs asynchronously.
func WaitMatrix(ctx context.Context, cases []ProbeCase, timeout time.Duration) ([]ProbeResult, error) {
	deadline := time.Now().Add(timeout)
	for {
		res, err := RunProbes(ctx, cases, time.Second)
		if err != nil {
			return res, err
		}
		bad := Mismatches(res)
		if len(bad) == 0 {
			return res, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return res, fmt.Errorf("probe matrix did not converge within %s: %d mismatches, first: %s", timeout, len(bad), bad[0])
		}
	}
}
