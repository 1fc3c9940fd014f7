package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// nfrouterBinary is $NFROUTER_BIN (make test-node builds it).
func nfrouterBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("NFROUTER_BIN")
	if bin == "" {
		t.Skip("NFROUTER_BIN not set (make test-node sets it)")
	}
	return bin
}

// daemonSetCaps reads the capabilities deploy/daemonset.yaml adds, in the
// OCI runtime's spelling.
func daemonSetCaps(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, c := range ds.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Add {
		caps = append(caps, "CAP_"+string(c))
	}
	return caps
}

// nodeNS is a network namespace standing for the node: lo up, eth0 (a veth)
// with node-1's address from deploy/examples, br_netfilter's sysctls at 0.
func nodeNS(t *testing.T) netns.NsHandle {
	t.Helper()
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "eth0-peer"}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	peer, err := h.LinkByName("eth0-peer")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	kerneltest.LinkUp(t, h, "eth0", "192.168.50.11/24")
	err = kerneltest.Do(ns, func() error {
		for _, f := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables"} {
			if err := os.WriteFile("/proc/sys/net/bridge/"+f, []byte("0"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		kerneltest.MissingFeature(t, "br_netfilter", err)
	}
	return ns
}

// container is a runc bundle: a read-only rootfs holding nfrouter and the
// example manifests, and the OCI config runc spec writes, changed to the
// DaemonSet's privileges and the node's network namespace.
type container struct {
	t      *testing.T
	runc   string
	dir    string
	config map[string]any
}

func newContainer(t *testing.T, ns netns.NsHandle, caps []string, args ...string) *container {
	t.Helper()
	kerneltest.RequireRoot(t)
	bin := nfrouterBinary(t)
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc not installed (apt-get install runc)")
	}
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, bin, filepath.Join(rootfs, "nfrouter"), 0o755)
	copyFile(t, "../../deploy/examples/field-report.yaml", filepath.Join(rootfs, "examples", "field-report.yaml"), 0o644)
	if out, err := exec.Command(runc, "spec", "--bundle", dir).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := &container{t: t, runc: runc, dir: dir}
	if err := json.Unmarshal(raw, &c.config); err != nil {
		t.Fatal(err)
	}
	process := c.config["process"].(map[string]any)
	process["terminal"] = false
	process["args"] = append([]string{"/nfrouter"}, args...)
	// The DaemonSet's capabilities only (drop ALL, add those), as root.
	process["capabilities"] = map[string]any{"bounding": caps, "effective": caps, "permitted": caps}
	process["noNewPrivileges"] = true // allowPrivilegeEscalation: false
	c.config["root"].(map[string]any)["readonly"] = true
	linux := c.config["linux"].(map[string]any)
	// runc spec's /proc/sys is in readonlyPaths already, as in every runtime.
	var namespaces []any
	for _, n := range linux["namespaces"].([]any) {
		if n.(map[string]any)["type"] != "network" {
			namespaces = append(namespaces, n)
		}
	}
	linux["namespaces"] = append(namespaces, map[string]any{"type": "network",
		"path": fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(ns))})
	linux["cgroupsPath"] = fmt.Sprintf("/nfrouter-node-test-%d", os.Getpid())
	return c
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// run runs the container to its end and returns its exit error and output.
// runc runs in a mount namespace of its own; its state is in the bundle.
func (c *container) run(name string) (string, error) {
	c.t.Helper()
	raw, err := json.Marshal(c.config)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "config.json"), raw, 0o644); err != nil {
		c.t.Fatal(err)
	}
	state := filepath.Join(c.dir, "state")
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, c.runc, "--root", state, "run", "--bundle", c.dir, name)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	runErr := cmd.Run()
	del := exec.Command(c.runc, "--root", state, "delete", "--force", name)
	del.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	del.Run() // gone already when it ended; this removes its cgroup otherwise
	return out.String(), runErr
}

// TestDaemonSetPrivileges runs nfrouter --once with the firewall, the
// nftables service proxy and the BGP router in a container with the
// DaemonSet's capabilities and a read-only /proc/sys, on a node whose
// bridge-nf-call sysctls are 0: the sync succeeds (BGP listens on port 179),
// the sysctls are reported, not fatal.
func TestDaemonSetPrivileges(t *testing.T) {
	ns := nodeNS(t)
	caps := daemonSetCaps(t)
	c := newContainer(t, ns, caps, "--manifests", "/examples", "--hostname-override", "node-1",
		"--service-proxy=nftables", "--run-router=true", "--health-port=0", "--once")
	out, err := c.run("daemonset-privileges")
	t.Logf("capabilities %v:\n%s", caps, out)
	if err != nil {
		t.Fatalf("nfrouter failed in the container: %v", err)
	}
	for _, want := range []string{`"msg":"Synced once"`, `"msg":"BGP server started"`, `"port":179`,
		`"sysctl":"net.bridge.bridge-nf-call-iptables"`, "read-only file system",
		`"msg":"Starting processes is forbidden by seccomp`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	err = kerneltest.Do(ns, func() error {
		b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
		if err == nil && strings.TrimSpace(string(b)) != "0" {
			err = fmt.Errorf("bridge-nf-call-iptables = %s; the container wrote it", b)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// TestBGPNeedsNetBindService: without CAP_NET_BIND_SERVICE (NET_ADMIN only,
// the DaemonSet before this tier) the router cannot listen on port 179.
func TestBGPNeedsNetBindService(t *testing.T) {
	ns := nodeNS(t)
	c := newContainer(t, ns, []string{"CAP_NET_ADMIN"}, "--manifests", "/examples", "--hostname-override", "node-1",
		"--run-firewall=false", "--run-service-proxy=false", "--run-router=true", "--health-port=0", "--once")
	out, err := c.run("no-bind-service")
	if err == nil || !strings.Contains(out, "bind: permission denied") {
		t.Fatalf("exit %v, want a failure to bind port 179:\n%s", err, out)
	}
}

// TestSeccompProfileCannotForbidExec shows why nfrouter forbids execve itself
// (--forbid-exec) instead of shipping a Localhost seccomp profile that does:
// runc installs the profile before it execs the entrypoint, so the container
// never starts.
func TestSeccompProfileCannotForbidExec(t *testing.T) {
	ns := nodeNS(t)
	c := newContainer(t, ns, daemonSetCaps(t), "--version")
	c.config["linux"].(map[string]any)["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ALLOW",
		"syscalls": []any{map[string]any{"names": []string{"execve", "execveat"}, "action": "SCMP_ACT_ERRNO", "errnoRet": 1}}}
	out, err := c.run("seccomp-no-exec")
	if err == nil || !strings.Contains(out, "exec /nfrouter: operation not permitted") {
		t.Fatalf("exit %v, want runc unable to exec /nfrouter:\n%s", err, out)
	}
	delete(c.config["linux"].(map[string]any), "seccomp")
	if out, err := c.run("no-seccomp"); err != nil || !strings.Contains(out, "nfrouter") {
		t.Fatalf("without the profile: %v\n%s", err, out)
	}
}
