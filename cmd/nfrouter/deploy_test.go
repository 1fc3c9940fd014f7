package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDeployedArgumentsParse expands the DaemonSet's arguments as the
// kubelet would (ConfigMap values, the downward API) and parses them: the
// metrics and health servers bind the node's address only, and the probes
// ask the health port.
func TestDeployedArgumentsParse(t *testing.T) {
	read := func(name string, into any) {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		// Skip leading comments and the document marker.
		if i := bytes.Index(b, []byte("apiVersion:")); i > 0 {
			b = b[i:]
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var ds appsv1.DaemonSet
	var cm corev1.ConfigMap
	read("daemonset.yaml", &ds)
	read("configmap.yaml", &cm)
	c := ds.Spec.Template.Spec.Containers[0]
	const hostIP = "192.168.50.11"
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.Value != "":
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP":
			env[e.Name] = hostIP
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "node-1"
		case e.ValueFrom.ConfigMapKeyRef != nil:
			if v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
				env[e.Name] = v
			}
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	var args []string
	for _, a := range c.Args {
		args = append(args, ref.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := env[m[2:len(m)-1]]
			if !ok {
				t.Errorf("argument %s names %s, which the container's environment lacks", a, m)
			}
			return v
		}))
	}
	o, err := parseOptions(args)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if o.metricsAddr != hostIP || o.healthAddr != hostIP || o.metricsPort == 0 || o.healthPort == 0 {
		t.Errorf("metrics on %s:%d, health on %s:%d; want both on the node's address %s", o.metricsAddr, o.metricsPort, o.healthAddr, o.healthPort, hostIP)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != strconv.Itoa(int(o.healthPort)) || p.HTTPGet.Host != "" {
			t.Errorf("%s probe %+v: want an HTTP GET of the health port at the pod's (the node's) address", name, p)
		}
	}
}
