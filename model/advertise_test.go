package model

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServicePortsFromAPIKeepAdvertiseAnnotations(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{
			AnnotationAdvertiseClusterIP:      "true",
			AnnotationAdvertiseExternalIP:     " false ",
			AnnotationAdvertiseLoadBalancerIP: "maybe",
			"example.com/other":               "x",
		}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	ports, err := ServicePortsFromAPI(svc)
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports = %v, %v", ports, err)
	}
	want := ProxyOptions{AdvertiseClusterIP: "true", AdvertiseExternalIP: "false", AdvertiseLoadBalancerIP: "maybe"}
	if got := ports[0].Options; got != want {
		t.Errorf("options = %+v, want %+v", got, want)
	}
}
