package main

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
)

// defaultCNIConfFile is where kube-router writes the bridge CNI config
// (its KUBE_ROUTER_CNI_CONF_FILE, in the .conflist form its manifests use).
const defaultCNIConfFile = "/etc/cni/net.d/10-kuberouter.conflist"

// nodeOptions are the flags about the node itself rather than one backend:
// the pod network's CNI config (kube-router's --enable-cni) and the seccomp
// filter that forbids starting processes.
type nodeOptions struct {
	forbidExec  bool
	enableCNI   bool
	cniConfFile string
}

func (n *nodeOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&n.forbidExec, "forbid-exec", true, "Install a seccomp filter at start that makes execve and execveat fail in every thread: the kernel holds nfrouter to never starting a process.")
	fs.BoolVar(&n.enableCNI, "enable-cni", false, "Write this node's pod CIDRs into the bridge CNI config (--cni-conf-file), as kube-router does: pods get addresses from host-local on kube-bridge, and nothing but nfrouter and the reference CNI plugins is needed for pod networking.")
	cniDefault := defaultCNIConfFile
	if env := os.Getenv("KUBE_ROUTER_CNI_CONF_FILE"); env != "" {
		cniDefault = env // kube-router's way to move it
	}
	fs.StringVar(&n.cniConfFile, "cni-conf-file", cniDefault, "CNI config file that --enable-cni writes (default from $KUBE_ROUTER_CNI_CONF_FILE when set).")
}

func (n *nodeOptions) validate() []string {
	if n.enableCNI && !filepath.IsAbs(n.cniConfFile) {
		return []string{"--cni-conf-file must be an absolute path, not " + n.cniConfFile}
	}
	return nil
}

// applyForbidExec installs the exec-forbidding filter when asked. A kernel
// without seccomp filters is a degradation, not a reason to stop (DESIGN
// principle 8): nfrouter starts no process either way.
func applyForbidExec(n nodeOptions, log *slog.Logger) {
	if !n.forbidExec {
		return
	}
	if err := forbidExec(); err != nil {
		log.Warn("Cannot install the seccomp filter that forbids starting processes", "error", err)
		return
	}
	log.Info("Starting processes is forbidden by seccomp (execve, execveat fail with EPERM)")
}
