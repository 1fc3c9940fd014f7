package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WebPorts are the field report's three container ports.
var WebPorts = []corev1.ContainerPort{
	{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
	{Name: "grpc", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
	{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP},
}

// CreateNamespace creates namespace name with labels.
func (b *Bed) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	_, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// HeadlessService is the field report's headless service in front of the web
// pods, with all three ports.
func HeadlessService(ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-headless", Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 8080}, {Name: "grpc", Port: 9090}, {Name: "metrics", Port: 9100}}},
	}
}

// ClusterIPService is an ordinary service (to another app: unrelated to the
// pods being churned).
func ClusterIPService(ns, name, app string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
}

// CreateService creates svc.
func (b *Bed) CreateService(ctx context.Context, svc *corev1.Service) error {
	if _, err := b.client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// AllowFrom is a policy selecting pods app=target, allowing ingress from pods
// app=from on the named or numbered ports.
func AllowFrom(ns, name, target, from string, ports ...intstr.IntOrString) *networkingv1.NetworkPolicy {
	var pp []networkingv1.NetworkPolicyPort
	for _, p := range ports {
		pp = append(pp, networkingv1.NetworkPolicyPort{Port: &p})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": target}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": from}}}},
				Ports: pp,
			}},
		},
	}
}

// ApplyPolicy creates np, or updates it when it exists.
func (b *Bed) ApplyPolicy(ctx context.Context, np *networkingv1.NetworkPolicy) error {
	c := b.client.NetworkingV1().NetworkPolicies(np.Namespace)
	cur, err := c.Get(ctx, np.Name, metav1.GetOptions{})
	if err == nil {
		np.ResourceVersion = cur.ResourceVersion
		_, err = c.Update(ctx, np, metav1.UpdateOptions{})
	} else {
		_, err = c.Create(ctx, np, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("apply policy %s/%s: %w", np.Namespace, np.Name, err)
	}
	return nil
}

// DeletePolicy deletes a policy.
func (b *Bed) DeletePolicy(ctx context.Context, ns, name string) error {
	if err := b.client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete policy %s/%s: %w", ns, name, err)
	}
	return nil
}

// Relabel sets the pod's app label (a kubectl label --overwrite).
func (b *Bed) Relabel(ctx context.Context, p *Pod, app string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{"app":%q}}}`, app)
	if _, err := b.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("relabel %s: %w", p.key(), err)
	}
	p.Labels = map[string]string{"app": app}
	return nil
}
