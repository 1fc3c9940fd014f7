package watch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

func TestLoadManifestsReportsBadDocumentsAndLoadsTheRest(t *testing.T) {
	store := model.NewStore(nil)
	f := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil)
	n, errs := LoadManifests(filepath.Join("testdata", "manifests"), f)

	// good.yaml: namespace, pod, and the List's service and slice; bad.yaml: the
	// node (and the policy, which is loaded but fails closed).
	if n != 5 {
		t.Errorf("applied %d objects, want 5", n)
	}
	wantErrs := []string{
		"bad.yaml: document 1 (ConfigMap shop/settings): unsupported kind",
		"bad.yaml: document 2 (NetworkPolicy shop/broken-cidr): NetworkPolicy shop/broken-cidr fails closed: ingress[0]: peer 0: ipBlock: invalid CIDR \"10.0.0.0/33\"",
		"bad.yaml: document 4: ",
		"unknown-kind.yaml: document 1: decode: ",
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(wantErrs), errors.Join(errs...))
	}
	for i, want := range wantErrs {
		var me *ManifestError
		if !errors.As(errs[i], &me) {
			t.Errorf("error %d is %T, want *ManifestError", i, errs[i])
		}
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], want)
		}
	}

	state, _ := store.Snapshot()
	if state.Pods.Get(model.PodKey{Namespace: "shop", Name: "web-0"}) == nil {
		t.Error("pod not loaded")
	}
	key := model.ServicePortKey{Namespace: "default", Name: "web", Port: "http", Protocol: model.TCP}
	if state.ServicePorts.Get(key) == nil || len(state.Endpoints.Get(key)) != 1 {
		t.Errorf("service from the List not loaded into the default namespace: %v %v", state.ServicePorts, state.Endpoints)
	}
	if p := state.Policies.Get(model.PolicyKey{Namespace: "shop", Name: "broken-cidr"}); p == nil || p.Err == "" {
		t.Error("the broken policy must be loaded, failing closed")
	}
	if state.Nodes.Get("node-1") == nil {
		t.Error("the node after the bad documents was not loaded")
	}
}

func TestLoadManifestsMissingPath(t *testing.T) {
	_, errs := LoadManifests(filepath.Join("testdata", "nope"), NewFeeder(model.NewStore(nil), nil, discardLogger(), NewMetrics(nil), nil))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "nope") {
		t.Errorf("errs = %v", errs)
	}
}
