// Package node is the node tier's first step: nfrouter run the way a kubelet
// runs it, as a container of the OCI runtime (runc) with exactly the
// privileges deploy/daemonset.yaml grants — its capabilities, a read-only root
// and the read-only /proc/sys every runtime mounts — in a network namespace
// of the test that stands for the node. It shows what a user meets in the
// first minutes: a br_netfilter sysctl at 0 that cannot be written, BGP's
// port 179, and a seccomp profile that forbids execve.
//
// Real kubelets and containerd on namespaced nodes (DESIGN tier 5) are not
// built yet; see the notes.
//
// Only the tests start processes: runc, in a mount namespace of its own
// (Go makes its mounts private), with a cgroup of its own that runc removes
// when the container is deleted. Nothing touches the machine's network.
package node
