#!/bin/sh
# Deploy nfrouter to a kind cluster and check that a NetworkPolicy is enforced.
# Needs docker, kind and kubectl; run from anywhere: deploy/kind/smoke.sh
# Not part of CI on machines without a Docker engine (see README).
# KEEP=1 keeps the cluster afterwards.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
name=nfrouter
for tool in docker kind kubectl; do
	command -v "$tool" >/dev/null || { echo "smoke: $tool is required" >&2; exit 1; }
done

cleanup() { [ "${KEEP:-}" = 1 ] || kind delete cluster --name "$name"; }
trap cleanup EXIT

echo "==> kind cluster without kube-proxy"
kind create cluster --config "$root/deploy/kind/cluster.yaml" --wait 120s
echo "==> image"
docker build -f "$root/deploy/Dockerfile" -t nfrouter:dev "$root"
kind load docker-image nfrouter:dev --name "$name"

echo "==> nfrouter"
kubectl apply -f "$root/deploy/rbac.yaml" -f "$root/deploy/configmap.yaml"
# No kube-proxy: point nfrouter at the API server itself, not the kubernetes Service.
kubectl -n kube-system patch configmap nfrouter --type merge \
	-p "{\"data\":{\"KUBERNETES_SERVICE_HOST\":\"$name-control-plane\",\"KUBERNETES_SERVICE_PORT\":\"6443\"}}"
kubectl apply -f "$root/deploy/daemonset.yaml"
kubectl -n kube-system rollout status daemonset/nfrouter --timeout 120s

echo "==> smoke test: web allows only app=frontend"
kubectl create namespace smoke
kubectl -n smoke run web --image=busybox:1.36 --labels=app=web --port=8080 -- \
	sh -c 'while true; do echo ok | nc -l -p 8080; done'
kubectl -n smoke run frontend --image=busybox:1.36 --labels=app=frontend -- sleep 3600
kubectl -n smoke run other --image=busybox:1.36 --labels=app=other -- sleep 3600
kubectl -n smoke wait --for=condition=Ready pod --all --timeout 120s
ip=$(kubectl -n smoke get pod web -o jsonpath='{.status.podIP}')
kubectl apply -f - <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-frontend, namespace: smoke}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: frontend}}}]}]
YAML
probe() { kubectl -n smoke exec "$1" -- nc -w 2 "$ip" 8080 </dev/null >/dev/null 2>&1; }
deadline=$(( $(date +%s) + 30 ))
until probe frontend && ! probe other; do
	[ "$(date +%s)" -lt "$deadline" ] || { echo "smoke: FAILED: policy not enforced within 30s" >&2; exit 1; }
done
echo "smoke: OK (frontend reaches web, other does not)"
