package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteDeployOverlay writes into dir a kustomization of the deploy/
// directory deploy that names the image ref and changes only what a cluster
// of these nodes needs in the ConfigMap: the router and CNI on (nfrouter is
// the pod network) and the API server's address (there is no kube-proxy).
// It returns dir, absolute, for `kubectl apply -k`.
func WriteDeployOverlay(dir, deploy, ref string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	deploy, err = filepath.Abs(deploy)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(dir, deploy)
	if err != nil {
		return "", err
	}
	name, tag, _ := strings.Cut(ref, ":")
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: nfrouter
  newName: %s
  newTag: %s
patches:
- target: {kind: ConfigMap, name: nfrouter}
  patch: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: nfrouter, namespace: kube-system}
    data:
      RUN_ROUTER: "true"
      ENABLE_CNI: "true"
      KUBERNETES_SERVICE_HOST: %q
      KUBERNETES_SERVICE_PORT: "%d"
`, rel, name, tag, APIServerIP, APIServerPort)
	return dir, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644)
}
