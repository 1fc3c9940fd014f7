package cluster

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestDeployManifests decodes deploy/'s manifests and checks what the
// DaemonSet promises: host network, NET_ADMIN and NET_BIND_SERVICE (BGP on
// port 179) as its only capabilities, the runtime's seccomp profile, and
// every ConfigMap key it reads defined (or optional).
func TestDeployManifests(t *testing.T) {
	var ds *appsv1.DaemonSet
	var cm *corev1.ConfigMap
	for _, f := range []string{"rbac.yaml", "configmap.yaml", "daemonset.yaml"} {
		objs, err := readManifests("../../deploy/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *appsv1.DaemonSet:
				ds = o
			case *corev1.ConfigMap:
				cm = o
			}
		}
	}
	if ds == nil || cm == nil {
		t.Fatal("deploy/ lacks the DaemonSet or the ConfigMap")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Error("DaemonSet is not hostNetwork")
	}
	c := spec.Containers[0]
	if caps := c.SecurityContext.Capabilities; !slices.Equal(caps.Add, []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}) || !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities add %v drop %v; want NET_ADMIN and NET_BIND_SERVICE only", caps.Add, caps.Drop)
	}
	if c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
		t.Error("container is privileged")
	}
	if sc := spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod does not run with the RuntimeDefault seccomp profile")
	}
	for _, e := range c.Env {
		ref := e.ValueFrom
		if ref == nil || ref.ConfigMapKeyRef == nil {
			continue
		}
		k := ref.ConfigMapKeyRef
		if _, ok := cm.Data[k.Key]; !ok && (k.Optional == nil || !*k.Optional) {
			t.Errorf("env %s reads ConfigMap key %s, which configmap.yaml lacks", e.Name, k.Key)
		}
	}
}
