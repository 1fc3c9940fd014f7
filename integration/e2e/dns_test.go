package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestDNSObjects(t *testing.T) {
	o := NewDNSObjects("10.96.0.10", CoreDNSImage)
	if o.Service.Spec.ClusterIP != "10.96.0.10" || o.Service.Name != "kube-dns" || o.Service.Namespace != "kube-system" {
		t.Errorf("service %s/%s at %s, want kube-system/kube-dns at 10.96.0.10", o.Service.Namespace, o.Service.Name, o.Service.Spec.ClusterIP)
	}
	if !labels.SelectorFromSet(o.Service.Spec.Selector).Matches(labels.Set(o.Deployment.Spec.Template.Labels)) {
		t.Error("the service does not select the DNS pods")
	}
	protocols := map[corev1.Protocol]bool{}
	for _, p := range o.Service.Spec.Ports {
		if p.Port == 53 && p.TargetPort.IntVal == 53 {
			protocols[p.Protocol] = true
		}
	}
	if !protocols[corev1.ProtocolUDP] || !protocols[corev1.ProtocolTCP] {
		t.Errorf("service ports %+v, want 53 over UDP and TCP", o.Service.Spec.Ports)
	}
	c := o.Deployment.Spec.Template.Spec.Containers[0]
	if c.Image != CoreDNSImage || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("container image %s pull %s, want %s never pulled", c.Image, c.ImagePullPolicy, CoreDNSImage)
	}
	if o.Deployment.Spec.Template.Spec.DNSPolicy != corev1.DNSDefault {
		t.Error("the DNS pod would resolve through itself")
	}
	if !strings.Contains(o.ConfigMap.Data["Corefile"], "kubernetes cluster.local") {
		t.Errorf("Corefile does not serve cluster.local:\n%s", o.ConfigMap.Data["Corefile"])
	}
	if o.Binding.Subjects[0].Name != o.ServiceAccount.Name || o.Deployment.Spec.Template.Spec.ServiceAccountName != o.ServiceAccount.Name {
		t.Error("the role binding or the pod names another service account")
	}
}
