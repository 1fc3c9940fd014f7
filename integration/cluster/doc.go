// Package cluster is the cluster test tier: a test bed made of real parts — etcd,
// kube-apiserver and kube-controller-manager on loopback, network namespaces as
// nodes and pods, and one nfrouter process per node namespace — that tests and
// the demo (cmd/demo) drive through the Kubernetes API.
//
// # Layout
//
//	host namespace    etcd, kube-apiserver, kube-controller-manager on 127.0.0.1;
//	                  the harness itself (it plays kubelet and scheduler)
//	fabric namespace  bridge br0; one veth per node (no address: a switch)
//	node namespace    eth0 on the bridge with the node's InternalIP; one veth per
//	                  pod with /32 routes (netnstest's routed-CNI layout); an
//	                  API proxy on 127.0.0.1 that forwards to the host's API
//	                  server (like k3s' agent load balancer); nfrouter, whose
//	                  BGP mesh (graceful restart on) installs the routes to the
//	                  other nodes' pod CIDRs: the bed adds none (WaitPodRoutes)
//	pod namespace     eth0 with the pod IP, default route via the node; small Go
//	                  servers on the pod's container ports
//
// Addresses exist only inside namespaces the bed made, so nothing it does
// touches the host's network; the namespaces are anonymous and held by file
// descriptors, so they vanish with the process even when it is killed.
//
// # Why the harness plays kubelet
//
// There is no container runtime here. The bed writes what a kubelet writes, in
// the same order (see Bed.ReplacePod), so that the real EndpointSlice
// controller and nfrouter's informers see realistic streams of updates.
//
// # Processes
//
// Only the harness starts processes (nfrouter never does; the field report test
// proves it with strace). Every child is started from one goroutine locked to
// its OS thread for the bed's lifetime, with Pdeathsig, so that children die
// with the harness even when it is killed; Close stops them by pid.
package cluster
