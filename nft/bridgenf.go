package nft

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Pods on a bridge (kube-bridge in kube-router's layout) talk to each other
// through the bridge: their packets are switched, not routed, and never reach
// the IP forward hook where the policy chains are. br_netfilter passes
// bridged IPv4 and IPv6 packets through the IP hooks when
// net.bridge.bridge-nf-call-iptables and -ip6tables are 1
// (https://docs.kernel.org/networking/bridge.html). Both are per network
// namespace since Linux 5.3 (a new namespace starts with 1), and
// /proc/sys/net shows the namespace of the thread that opens the file, so
// they are read and written from a thread in the namespace the firewall
// programs.
//
// The firewall sets them whenever the files exist, not only when a
// kube-bridge exists: the CNI plugin makes the bridge when the first pod
// starts, which can be after the firewall's check, and a pod bridged before
// the next check would bypass every policy. Kubernetes requires them to be 1
// on every node anyway (kubeadm's preflight checks them); routed pods are not
// affected. Without br_netfilter (the files are absent) nothing is written.
var bridgeNFSysctls = []string{
	"/proc/sys/net/bridge/bridge-nf-call-iptables",
	"/proc/sys/net/bridge/bridge-nf-call-ip6tables",
}

// errNoBridgeNF reports that the namespace has no br_netfilter sysctls.
var errNoBridgeNF = errors.New("br_netfilter not loaded: no " + bridgeNFSysctls[0])

// sysctlResult is what ensureBridgeNF found and did for one sysctl.
type sysctlResult struct {
	Path    string
	Changed bool  // it was not 1 and now is
	Err     error // it is not 1 and could not be set (read-only /proc/sys, no permission)
}

// ensureBridgeNF sets the bridge-nf-call sysctls of the network namespace
// nsFd (0: the current one) to 1. A sysctl that already is 1 is not written,
// so a read-only /proc/sys (as every container runtime mounts it) costs
// nothing where the node already has them on. It returns errNoBridgeNF when
// br_netfilter is absent; a sysctl it cannot read or write is reported in its
// result, and the others are still tried.
func ensureBridgeNF(nsFd int) (results []sysctlResult, err error) {
	err = inNetNS(nsFd, func() error {
		for _, f := range bridgeNFSysctls {
			b, err := os.ReadFile(f)
			if errors.Is(err, fs.ErrNotExist) {
				return errNoBridgeNF
			}
			switch {
			case err != nil:
				results = append(results, sysctlResult{Path: f, Err: err}) // a PathError: names the file
			case strings.TrimSpace(string(b)) == "1":
				results = append(results, sysctlResult{Path: f})
			default:
				if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
					results = append(results, sysctlResult{Path: f, Err: err})
					continue
				}
				results = append(results, sysctlResult{Path: f, Changed: true})
			}
		}
		return nil
	})
	return results, err
}

// inNetNS runs fn on a thread in network namespace nsFd (0: the current
// one). The thread is locked and never unlocked, so the runtime ends it
// instead of reusing it in the other namespace.
func inNetNS(nsFd int, fn func() error) error {
	if nsFd == 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(nsFd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		done <- fn()
	}()
	return <-done
}
