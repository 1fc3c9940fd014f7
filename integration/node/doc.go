// Package node is the node tier (DESIGN tier 5): real kubelets and
// containerd, the image built from the repository and deploy/ applied
// through kustomize, with nothing but nfrouter and the reference CNI plugins
// for pod networking and no kube-proxy. It also runs nfrouter in runc with
// exactly the DaemonSet's privileges (runc_test.go).
//
// # Layout
//
//	control-plane namespace  br0 192.168.50.1/24; etcd (127.0.0.1:2379),
//	                         kube-apiserver (:6443, advertised on
//	                         192.168.50.1), kube-controller-manager (default
//	                         controllers, node IPAM: 10.244.N.0/24 per node),
//	                         kube-scheduler. The harness reaches the API server
//	                         through a forwarder on its own loopback
//	                         (Cluster.Kubeconfig); nodes at 192.168.50.1:6443.
//	node-N network namespace eth0 192.168.50.1N on br0, default route via
//	                         192.168.50.1, ip_forward and bridge-nf-call-* on
//	                         (per namespace). hostNetwork pods run here.
//	node-N mount namespace   private (unshare --propagation private), held by
//	                         a "mounts" process: tmpfs over /run and /var/lib,
//	                         Dir/log bound over /var/log, an overlay over /etc
//	                         (so /etc/cni/net.d exists for kubelet's hostPath
//	                         and containerd's CNI config without touching the
//	                         machine's /etc), files bound over the 3 /proc/sys
//	                         entries kubelet writes. containerd and kubelet
//	                         join it with nsenter.
//
// # API (for tests such as upstream's e2e suites)
//
//	c, err := node.Start(ctx, node.Config{Binaries: bins, Nodes: 2, PauseImage: pauseTar})
//	defer c.Close()
//	c.ImportImage(ctx, "agnhost.tar") // into every node's containerd (k8s.io namespace)
//	c.Kubeconfig()                     // admin kubeconfig, usable from the harness
//	c.Kubectl(ctx, "apply", "-k", dir) // kubectl built with the cluster
//	c.Nodes[i].NS, .IP, .PodNetNS(uid) // to probe from a node or a pod
//
// Binaries come from cluster.EnsureBinaries; BuildImage makes an image archive
// from a main package (pause, the test server, or any static program). Start
// returns with kubelets registered but NotReady: a node is Ready once a CNI
// config appears in its /etc/cni/net.d (nfrouter's --enable-cni writes it).
// The API server can reach kubelets (192.168.50.1N:10250, client certificate
// of system:masters; kubelets authorize AlwaysAllow), so logs and exec work.
//
// # What kubelet v1.37 and containerd 1.6 need here
//
// Found on a Debian 12 machine with cgroup v1 (hybrid), no systemd, root
// without CAP_SYS_RESOURCE:
//   - kubelet: failCgroupV1: false, cgroupDriver: cgroupfs, cgroupRoot = a
//     cgroup of the test's own made under every hierarchy (each v1
//     controller, name=systemd, unified; cpuset.cpus/mems copied down), an
//     empty resolvConf, failSwapOn: false, podLogsDir and volumePluginDir
//     inside the node's mounts, eviction thresholds low (the disk is shared).
//     It logs that containerd 1.6 lacks RuntimeConfig and uses its own
//     cgroupDriver (the fallback ends in 1.38).
//   - kubelet writes vm.overcommit_memory=1, kernel.panic=10 and
//     kernel.panic_on_oops=1, which are global: files holding exactly those
//     values, bound over the entries in the node's mount namespace, make it
//     read and write nothing.
//   - containerd: restrict_oom_score_adj = true (else runc fails with "can't
//     get final child's PID from pipe: EOF"), SystemdCgroup = false, the CRI
//     plugin's sandbox_image = the local pause image (no registry is
//     reachable), CNI bin_dir /usr/lib/cni (Debian's), the opt plugin's path
//     inside /var/lib (its default /opt/containerd is on the machine's disk),
//     its socket in the node's directory so the harness's ctr and the kubelet
//     reach it.
//   - Start nodes with nsenter into the network namespace and unshare -m, not
//     `ip netns exec` (which remounts /sys and hides /sys/fs/cgroup).
//   - Images: an OCI layout archive with containerd's name annotation imports
//     with `ctr -n k8s.io images import`; pods use imagePullPolicy Never or
//     IfNotPresent with a non-latest tag.
//
// # Processes and cleanup
//
// Only the harness starts processes, from one goroutine locked to one thread
// (setns before fork; Pdeathsig). containerd and kubelet are placed in the
// node's "system" cgroup before they start, kubelet puts pods below the same
// node cgroup, so Close stops kubelet and containerd by pid, then kills
// whatever is left in the node's cgroups (containers and shims, all started
// for the node), removes the cgroups deepest first, ends the mount namespace's
// holder (its mounts go with it) and closes the network namespaces. A run
// killed before Close (a test timeout) leaves containers in its cgroups; the
// next Start kills them and removes those cgroups and its work directory.
package node
