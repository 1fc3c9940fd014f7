# nfrouter build and test entry points. `make test` and `make demo` do their own
# set-up on a fresh Debian machine (as root): they install the Debian packages they
# need and build what they need, caching heavy artefacts under $(CACHE_DIR).

GO        ?= go
BIN_DIR   ?= bin
# Heavy, reusable artefacts (kernels, API server binaries) live outside the clone so
# that later runs on the same machine reuse them.
CACHE_DIR ?= /var/cache/nfrouter
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)

# Debian packages the tests need: nft for round-trip checks, iproute2 for test
# namespaces, strace to prove that nothing is exec'd, qemu/cpio/kmod for the VM tier.
# iptables (iptables-nft) and ipset make kube-router's leftovers for the cleanup test.
# containerd proves that the image imports; runc and the reference CNI plugins serve
# the node tier.
TEST_PACKAGES := nftables iproute2 strace qemu-system-x86 cpio kmod bird2 iptables ipset containerd runc containernetworking-plugins

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# VM tier (integration/vm): each package in VM_TEST_PACKAGES is compiled
# statically and booted once per kernel in VM_KERNELS under qemu (software
# emulation). A package opts in by being listed here; its kernel-tier tests
# must also pass (or skip) on the host. Kernels are names of
# vm.DefaultKernels or name=metapackage; they are cached in VM_CACHE_DIR.
VM_CACHE_DIR     ?= $(CACHE_DIR)/vm
VM_KERNELS       ?= 6.1,6.12
VM_TEST_PACKAGES ?= ./integration/vmsmoke ./ipvs ./bgp ./nft
VM_TEST_FLAGS    ?= -test.v
VM_TIMEOUT       ?= 12m
VM_ACCEL         ?= tcg

# Cluster tier (integration/cluster) and the demo: etcd, kube-apiserver and
# kube-controller-manager are built from integration/cluster/tools (Go modules
# of their own) and cached in CLUSTER_CACHE_DIR by version; the first build
# takes ~13 min on 2 cores.
CLUSTER_CACHE_DIR ?= $(CACHE_DIR)/cluster
CLUSTER_TIMEOUT   ?= 60m
CLUSTER_TESTS     ?= .
DEMO_FLAGS        ?=
# bench-compare: nfrouter beside kube-proxy (nftables mode) at 1k and 10k
# ClusterIP services x 10 endpoints against one API server; add -large for
# 50k (long on 2 cores); and beside kube-router v2.1.0 (firewall only) in the
# field report's pod churn with a NetworkPolicy. -scenarios churn (or
# services) runs one scenario alone. Results, table and plots go to BENCH_OUT.
BENCH_COMPARE_FLAGS ?=
BENCH_OUT           ?= bench-results

# make e2e: upstream's sig-network e2e suites (e2e.test and agnhost built from
# k8s.io/kubernetes by integration/cluster/tools/e2e, cached in CLUSTER_CACHE_DIR;
# the agnhost image gets a Debian shell userland fetched with apt-get download,
# cached in CACHE_DIR/e2e) on E2E_NODES nodes of the node tier with nfrouter as
# the only network agent. E2E_SUITES: netpol (the NetworkPolicy suite), services
# (the Services conformance cases), ci (a curated NetworkPolicy subset). The
# results table goes to E2E_OUT/results.md. The whole suites are heavy (~10 min
# once built): `make test` runs only test-e2e-ci.
E2E_SUITES ?= netpol,services
E2E_NODES  ?= 2
E2E_OUT    ?= $(BIN_DIR)/e2e
E2E_FLAGS  ?=

# make image: the static binary for every IMAGE_PLATFORMS, cross-compiled, in one
# multi-platform OCI image (empty base, one layer, /nfrouter as entrypoint) written
# as IMAGE_TAR, which `ctr -n k8s.io image import` and `docker load` accept. No
# Docker needed; deploy/Dockerfile describes the same image for those with one.
IMAGE           ?= nfrouter:dev
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_TAR       ?= $(BIN_DIR)/nfrouter-image.tar

.PHONY: all build image image-test test test-unit test-kernel test-vm test-cluster test-node e2e test-e2e-ci demo bench-compare lint bench setup clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/nfrouter ./cmd/nfrouter

image:
	@set -e; for p in $(IMAGE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "build $$p"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
	    -o $(BIN_DIR)/$$os-$$arch/nfrouter ./cmd/nfrouter; done
	$(GO) run ./integration/image/cmd/mkimage -name $(IMAGE) -o $(IMAGE_TAR) \
	  $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(BIN_DIR)/$(subst /,-,$(p))/nfrouter)

# image-test imports IMAGE_TAR into a containerd of its own (root; skips without
# containerd) and checks its name, platforms and blobs.
image-test: image
	NFROUTER_IMAGE_TAR=$(abspath $(IMAGE_TAR)) NFROUTER_IMAGE=$(IMAGE) \
	  $(GO) test -count=1 -v -run TestContainerdImports ./integration/image/

# setup installs missing Debian packages; it does nothing when all are present and
# only warns when not root (the privileged tiers then skip with a message).
setup:
	@missing=""; for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "setup: all packages present"; \
	elif [ "$$(id -u)" != 0 ]; then echo "setup: not root, cannot install:$$missing (privileged tests will skip)"; \
	else echo "setup: installing$$missing"; apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi

# test runs every tier: unit and kernel tests (kernel tests skip when not root),
# then the cluster tier (skips when not root) and the VM tier.
test: setup lint test-unit test-cluster test-node test-e2e-ci test-vm

test-unit:
	$(GO) test -count=1 ./...

# test-vm first proves that the harness fails loudly (failing test, kernel
# panic, hang, bad module), then runs the opted-in packages on every kernel.
test-vm:
	@if ! command -v qemu-system-x86_64 >/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then echo "test-vm: skipped: qemu-system-x86_64 missing and not root (run make setup as root)"; exit 0; fi; \
	  echo "test-vm: qemu-system-x86_64 missing (make setup installs it)"; exit 1; fi; \
	set -ex; \
	NFROUTER_VM_CACHE=$(VM_CACHE_DIR) $(GO) test -count=1 ./integration/vm/...; \
	$(GO) run ./integration/vm/cmd/vmtest -go $(GO) -cache $(VM_CACHE_DIR) -kernels $(VM_KERNELS) \
	  -timeout $(VM_TIMEOUT) -accel $(VM_ACCEL) $(VM_TEST_PACKAGES) -- $(VM_TEST_FLAGS)

# test-cluster runs the cluster scenarios (field report, policy end to end,
# restart, RBAC) against real control-plane processes; it needs root.
test-cluster: build
	@if [ "$$(id -u)" != 0 ]; then echo "test-cluster: skipped: the cluster tier needs root (network namespaces, nftables)"; exit 0; fi; \
	set -x; NFROUTER_CLUSTER_CACHE=$(CLUSTER_CACHE_DIR) NFROUTER_BIN=$(abspath $(BIN_DIR))/nfrouter GO=$(GO) \
	  $(GO) test -count=1 -v -timeout $(CLUSTER_TIMEOUT) -run '$(CLUSTER_TESTS)' ./integration/cluster/

# test-node is the user's path (integration/node): two kubelet nodes with
# containerd, each a network and mount namespace of its own, deploy/ applied
# through kustomize with the image imported (NODE_IMAGE_TAR: this machine's
# platform only, no cross build), no kube-proxy and no other CNI; then a
# Deployment rolled twice while its services are probed, a NetworkPolicy,
# nfrouter's metrics. Also nfrouter in runc with exactly the DaemonSet's
# privileges. The test takes 50-100 s once the Kubernetes binaries are
# cached (built as for test-cluster). It needs root, containerd, runc and
# the reference CNI plugins (make setup installs them).
NODE_TIMEOUT   ?= 10m
NODE_TESTS     ?= .
NODE_IMAGE_TAR ?= $(BIN_DIR)/nfrouter-image-local.tar
test-node: build
	@if [ "$$(id -u)" != 0 ]; then echo "test-node: skipped: the node tier needs root (namespaces, mounts, cgroups)"; exit 0; fi; \
	set -x; $(MAKE) --no-print-directory image IMAGE_PLATFORMS=linux/$$($(GO) env GOARCH) IMAGE_TAR=$(NODE_IMAGE_TAR) && \
	NFROUTER_BIN=$(abspath $(BIN_DIR))/nfrouter NFROUTER_IMAGE_TAR=$(abspath $(NODE_IMAGE_TAR)) NFROUTER_IMAGE=$(IMAGE) \
	  NFROUTER_CLUSTER_CACHE=$(CLUSTER_CACHE_DIR) GO=$(GO) \
	  $(GO) test -count=1 -v -timeout $(NODE_TIMEOUT) -run '$(NODE_TESTS)' ./integration/node/

e2e: setup build
	@if [ "$$(id -u)" != 0 ]; then echo "e2e: needs root (nodes are network and mount namespaces)"; exit 1; fi; \
	set -x; $(MAKE) --no-print-directory image IMAGE_PLATFORMS=linux/$$($(GO) env GOARCH) IMAGE_TAR=$(NODE_IMAGE_TAR) && \
	GO=$(GO) $(GO) run ./integration/e2e/cmd/e2e -cache $(CACHE_DIR) -out $(E2E_OUT) -suites $(E2E_SUITES) \
	  -nodes $(E2E_NODES) -nfrouter $(NODE_IMAGE_TAR) -nfrouter-ref $(IMAGE) $(E2E_FLAGS)

# test-e2e-ci is make e2e's curated NetworkPolicy subset (five upstream Netpol
# cases: named ports, namespace selectors, all probed through service IPs) on
# two nodes: about 2 minutes with the binaries cached (the first build of
# e2e.test and agnhost takes ~4 min on 2 cores once the Kubernetes packages are
# compiled). No case of it resolves a name, so it runs without cluster DNS and
# CI never builds CoreDNS. Root only.
test-e2e-ci:
	@if [ "$$(id -u)" != 0 ]; then echo "test-e2e-ci: skipped: the node tier needs root (namespaces, mounts, cgroups)"; exit 0; fi; \
	$(MAKE) e2e E2E_SUITES=ci E2E_NODES=2 E2E_OUT=$(BIN_DIR)/e2e-ci E2E_FLAGS=-dns-ip=

# demo starts a 2-node test bed with nfrouter on both nodes; see README.
demo: setup build
	@if [ "$$(id -u)" != 0 ]; then echo "demo: needs root (network namespaces, nftables)"; exit 1; fi
	GO=$(GO) $(GO) run ./integration/cluster/cmd/demo -cache $(CLUSTER_CACHE_DIR) -nfrouter $(BIN_DIR)/nfrouter $(DEMO_FLAGS)

# bench-compare measures the whole agent from outside, side by side with
# kube-proxy v1.37 --proxy-mode=nftables and kube-router v2.1.0 (its iptables
# and ipset come from setup; it is built by integration/cluster/tools/kuberouter
# into CLUSTER_CACHE_DIR) (integration/cluster/cmd/benchcompare); it prints a
# Markdown table and writes results.json and PNG plots to BENCH_OUT.
bench-compare: setup build
	@if [ "$$(id -u)" != 0 ]; then echo "bench-compare: needs root (network namespaces, nftables)"; exit 1; fi
	GO=$(GO) $(GO) run ./integration/cluster/cmd/benchcompare -cache $(CLUSTER_CACHE_DIR) -nfrouter $(BIN_DIR)/nfrouter \
	  -out $(BENCH_OUT) $(BENCH_COMPARE_FLAGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN_DIR)
