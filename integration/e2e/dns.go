package e2e

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nfrouter/nfrouter/integration/image"
)

// CoreDNSImage is the reference the cluster DNS image is imported under;
// pods never pull it.
const CoreDNSImage = "nfrouter-e2e/coredns:v1.15.0"

// corefile serves the cluster domain from the API (pod records too: some
// cases resolve pod A records) and nothing else: the nodes have no upstream
// resolver.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
}
`

// CoreDNSSpec is the cluster DNS image: the static CoreDNS binary built by
// the tools.
func CoreDNSSpec(coredns []byte) image.Spec {
	return image.Spec{Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Entrypoint: []string{"/coredns"}, Env: imageEnv,
		Files: []image.File{{Path: "/coredns", Mode: 0o755, Data: coredns}}}
}

// DNSObjects are the cluster DNS's objects in kube-system: the kube-dns
// Service at clusterIP (the kubelets' clusterDNS), a one-replica CoreDNS
// Deployment, its Corefile, and the RBAC it needs to watch services,
// endpoint slices, pods and namespaces.
type DNSObjects struct {
	ServiceAccount *corev1.ServiceAccount
	ClusterRole    *rbacv1.ClusterRole
	Binding        *rbacv1.ClusterRoleBinding
	ConfigMap      *corev1.ConfigMap
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
}

// NewDNSObjects builds the objects for a DNS at clusterIP running image.
func NewDNSObjects(clusterIP, img string) DNSObjects {
	const ns, name = "kube-system", "coredns"
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	replicas := int32(1)
	dnsPorts := func() []corev1.ServicePort {
		return []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
		}
	}
	return DNSObjects{
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta},
		ClusterRole: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		}},
		Binding: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}},
		ConfigMap: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"Corefile": corefile}},
		Deployment: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: name,
				// Its own lookups must not go to itself.
				DNSPolicy: corev1.DNSDefault,
				Containers: []corev1.Container{{
					Name: name, Image: img, ImagePullPolicy: corev1.PullNever,
					Args: []string{"-conf", "/etc/coredns/Corefile"},
					Ports: []corev1.ContainerPort{
						{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
						{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}, PeriodSeconds: 2},
				}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
			}},
		}},
		Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, ClusterIP: clusterIP, Ports: dnsPorts()}},
	}
}

// Apply creates the objects (existing ones are left as they are) and waits
// until the DNS pod is ready or timeout passes.
func (o DNSObjects) Apply(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	ns := o.Deployment.Namespace
	creates := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, o.ServiceAccount, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, o.ClusterRole, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, o.Binding, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, o.ConfigMap, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, o.Service, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().Deployments(ns).Create(ctx, o.Deployment, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster DNS: %w", err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, o.Deployment.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.ReadyReplicas >= 1, nil
	})
	if err != nil {
		return fmt.Errorf("cluster DNS: not ready after %s: %w", timeout, err)
	}
	return nil
}
