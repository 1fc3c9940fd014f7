package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/bgp"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

func TestCleanupUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cleanup", "--keep-nfrouter"}, "--keep-nfrouter without --kube-router-leftovers"},
		{[]string{"cleanup", "--service-node-port-range", "9-1"}, "--service-node-port-range"},
		{[]string{"cleanup", "extra"}, `unexpected argument "extra"`},
		{[]string{"explode"}, `unknown command "explode"`},
	} {
		code, stdout, stderr := runCommand(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	code, stdout, _ := runCommand(t, "cleanup", "--help")
	if code != exitOK || !strings.Contains(stdout, "--kube-router-leftovers") {
		t.Errorf("cleanup --help: exit %d, %q", code, stdout)
	}
	code, stdout, _ = runCommand(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "cleanup") {
		t.Errorf("--help does not list the cleanup command: %q", stdout)
	}
}

// snapshot lists every object of the namespace that cleanup could touch,
// one line each, sorted: nftables tables, chains, sets and rules (by
// handle and expression types), links, routes of every table.
func snapshot(t *testing.T, ns netns.NsHandle) []string {
	t.Helper()
	var out []string
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	chains, err := conn.ListChains()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		out = append(out, fmt.Sprintf("table %d %s", tb.Family, tb.Name))
		sets, err := conn.GetSets(tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			out = append(out, fmt.Sprintf("set %d %s %s", tb.Family, tb.Name, s.Name))
		}
	}
	for _, c := range chains {
		out = append(out, fmt.Sprintf("chain %d %s %s", c.Table.Family, c.Table.Name, c.Name))
		rules, err := conn.GetRules(c.Table, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			var kinds []string
			for _, e := range r.Exprs {
				k := fmt.Sprintf("%T", e)
				if v, ok := e.(*expr.Verdict); ok {
					k += ":" + v.Chain
				}
				kinds = append(kinds, k)
			}
			out = append(out, fmt.Sprintf("rule %d %s %s #%d %s", c.Table.Family, c.Table.Name, c.Name, r.Handle, strings.Join(kinds, ",")))
		}
	}
	out = append(out, kerneltest.LinksAndRoutes(t, kerneltest.Handle(t, ns))...)
	slices.Sort(out)
	return out
}

// diff returns the lines only in a and only in b.
func diff(a, b []string) (onlyA, onlyB []string) { return minus(a, b), minus(b, a) }

// cleanupIn runs `nfrouter cleanup args…` in ns and returns its output.
func cleanupIn(t *testing.T, ns netns.NsHandle, args ...string) string {
	t.Helper()
	var code int
	var stdout, stderr string
	if err := kerneltest.Do(ns, func() error {
		code, stdout, stderr = runCommand(t, append([]string{"cleanup"}, args...)...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if code != exitOK {
		t.Fatalf("cleanup %v: exit %d\n%s%s", args, code, stdout, stderr)
	}
	return stdout
}

// nodeNS is a node's network namespace: eth0 (a veth) with node-1's address
// of deploy/examples, and foreign objects that cleanup must leave: an
// nftables table with a chain, a static route, a route of bird's protocol.
func nodeNS(t *testing.T) (netns.NsHandle, *netlink.Handle) {
	ns := kerneltest.NewNetNS(t)
	// IPv6 off in this namespace (node-1 has no IPv6 address): the kernel
	// adds a veth's fe80::/64 and ff00::/8 routes when its carrier comes up,
	// asynchronously (linkwatch), which would race the snapshots.
	if err := kerneltest.Do(ns, func() error {
		for _, conf := range []string{"all", "default"} {
			// /proc/sys/net is the namespace of the thread that opens it.
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+conf+"/disable_ipv6", []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("disable IPv6 in the test namespace: %v", err)
	}
	h := kerneltest.Handle(t, ns)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}); err != nil {
		t.Fatal(err)
	}
	eth0 := kerneltest.LinkUp(t, h, "eth0", "192.168.50.11/24")
	kerneltest.LinkUp(t, h, "peer0", "192.168.50.1/24")
	for _, r := range []*netlink.Route{
		{Dst: &net.IPNet{IP: net.IPv4(10, 99, 0, 0), Mask: net.CIDRMask(24, 32)}, Gw: net.IPv4(192, 168, 50, 1), Protocol: unix.RTPROT_STATIC},
		{Dst: &net.IPNet{IP: net.IPv4(10, 98, 0, 0), Mask: net.CIDRMask(24, 32)}, Gw: net.IPv4(192, 168, 50, 1), Protocol: 12}, // bird
	} {
		r.LinkIndex = eth0.Attrs().Index
		if err := h.RouteAdd(r); err != nil {
			t.Fatalf("foreign route %s: %v", r.Dst, err)
		}
	}
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	foreign := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "foreign"})
	conn.AddChain(&nftables.Chain{Name: "input", Table: foreign, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter})
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	return ns, h
}

// TestCleanupRemovesWhatNFRouterProgrammedAndNothingElse runs the agent
// with --once: firewall, nftables service proxy, router with pod egress (its
// BGP peer, node-2, is not there, so the routes it would learn are added by
// hand with its protocol); then it checks
// that cleanup returns the namespace to what it was, object by object,
// foreign table and routes included, and that a second run has nothing to do.
func TestCleanupRemovesWhatNFRouterProgrammedAndNothingElse(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns, h := nodeNS(t)
	before := snapshot(t, ns)

	runOnceIn(t, ns, "--manifests", filepath.Join("..", "..", "deploy", "examples"), "--hostname-override", "node-1",
		"--service-proxy=nftables", "--run-router=true", "--once", "--log-format", "json")
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{"10.244.2.0/24", "10.244.3.0/24"} {
		_, n, _ := net.ParseCIDR(dst)
		if err := h.RouteAdd(&netlink.Route{Dst: n, Gw: net.IPv4(192, 168, 50, 12), LinkIndex: eth0.Attrs().Index, Protocol: bgp.RouteProtocol}); err != nil {
			t.Fatal(err)
		}
	}
	programmed := snapshot(t, ns)
	added, gone := diff(programmed, before)
	if len(gone) != 0 || !slices.Contains(added, fmt.Sprintf("table %d nfrouter", nftables.TableFamilyINet)) || len(added) < 10 {
		t.Fatalf("programming did not add nfrouter's table and routes (added %v, gone %v)", added, gone)
	}

	out := cleanupIn(t, ns)
	for _, want := range []string{"removed nftables table inet nfrouter\n",
		"removed route 10.244.2.0/24 (protocol 78, table 254)\n", "removed route 10.244.3.0/24 (protocol 78, table 254)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("cleanup did not say %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Errorf("cleanup printed more than the three objects:\n%s", out)
	}
	after := snapshot(t, ns)
	if extra, missing := diff(after, before); len(extra) != 0 || len(missing) != 0 {
		t.Errorf("after cleanup the namespace differs from before:\n left: %v\n removed too: %v", extra, missing)
	}
	if out := cleanupIn(t, ns); out != "nothing to do\n" {
		t.Errorf("second cleanup: %q, want nothing to do", out)
	}
	if out := cleanupIn(t, ns, "--kube-router-leftovers"); out != "nothing to do\n" {
		t.Errorf("cleanup --kube-router-leftovers without kube-router's objects: %q, want nothing to do", out)
	}
	// kube-router's spelling, with a kube-router DaemonSet's arguments.
	var code int
	var stdout string
	if err := kerneltest.Do(ns, func() error {
		code, stdout, _ = runCommand(t, "--run-router=true", "--bgp-graceful-restart=true", "--cleanup-config")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if code != exitOK || stdout != "nothing to do\n" {
		t.Errorf("--cleanup-config: exit %d, %q", code, stdout)
	}
}

// runIn runs a program in ns; the test skips when it is not installed.
func runIn(t *testing.T, ns netns.NsHandle, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (make setup installs Debian's iptables and ipset)", name)
	}
	var out bytes.Buffer
	err = kerneltest.Do(ns, func() error {
		cmd := exec.Command(path, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd.Run()
	})
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestCleanupRemovesKubeRouterLeftovers makes what kube-router leaves with
// the tools kube-router runs (iptables-nft, ipset) next to foreign chains,
// rules and sets, while nfrouter's table is programmed; cleanup
// --kube-router-leftovers --keep-nfrouter removes kube-router's objects only.
func TestCleanupRemovesKubeRouterLeftovers(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns, h := nodeNS(t)
	ipt := func(args ...string) { runIn(t, ns, "iptables-nft", args...) }
	ipset := func(args ...string) { runIn(t, ns, "ipset", args...) }
	listSets := func() string { return runIn(t, ns, "ipset", "list", "-n") }
	// Foreign: a chain with a jump, a rule matching a foreign set.
	ipset("create", "foreign", "hash:ip")
	ipt("-N", "MINE")
	ipt("-A", "FORWARD", "-j", "MINE")
	ipt("-A", "FORWARD", "-m", "set", "--match-set", "foreign", "src", "-j", "ACCEPT")
	ipt("-t", "nat", "-A", "POSTROUTING", "-s", "10.0.0.0/8", "-j", "MASQUERADE")
	runIn(t, ns, "ip6tables-nft", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT")
	runOnceIn(t, ns, "--manifests", filepath.Join("..", "..", "deploy", "examples"), "--hostname-override", "node-1",
		"--service-proxy=nftables", "--run-router=false", "--once", "--log-format", "json")
	before, setsBefore := snapshot(t, ns), listSets()

	// kube-router's, as its network policy, proxy and router controllers
	// name them.
	ipset("create", "kube-router-pod-subnets", "hash:net")
	ipset("create", "kube-router-node-ips", "hash:ip")
	ipset("create", "KUBE-SRC-3BRXDSPLUFVDDXNF", "hash:ip")
	ipset("create", "inet6:kube-router-pod-subnets", "hash:net", "family", "inet6")
	ipt("-N", "KUBE-ROUTER-FORWARD")
	ipt("-I", "FORWARD", "1", "-m", "comment", "--comment", "kube-router netpol", "-j", "KUBE-ROUTER-FORWARD")
	ipt("-N", "KUBE-POD-FW-4YUTZOZTS6YGRL7T")
	ipt("-N", "KUBE-NWPLCY-ZTAUFDFGO5OJFNSR")
	ipt("-A", "KUBE-ROUTER-FORWARD", "-d", "10.244.1.10", "-j", "KUBE-POD-FW-4YUTZOZTS6YGRL7T")
	ipt("-A", "KUBE-POD-FW-4YUTZOZTS6YGRL7T", "-j", "KUBE-NWPLCY-ZTAUFDFGO5OJFNSR")
	ipt("-A", "KUBE-NWPLCY-ZTAUFDFGO5OJFNSR", "-m", "set", "--match-set", "KUBE-SRC-3BRXDSPLUFVDDXNF", "src", "-j", "ACCEPT")
	ipt("-t", "nat", "-A", "POSTROUTING", "-m", "set", "--match-set", "kube-router-pod-subnets", "src",
		"-m", "set", "!", "--match-set", "kube-router-node-ips", "dst", "-j", "MASQUERADE")
	runIn(t, ns, "ip6tables-nft", "-N", "KUBE-ROUTER-INPUT")
	runIn(t, ns, "ip6tables-nft", "-A", "INPUT", "-j", "KUBE-ROUTER-INPUT")
	runIn(t, ns, "ip6tables-nft", "-A", "KUBE-ROUTER-INPUT", "-m", "set", "--match-set", "inet6:kube-router-pod-subnets", "src", "-j", "ACCEPT")
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "kube-router-filter-ipv4"})
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("10.244.2.0/24")
	if err := h.RouteAdd(&netlink.Route{Dst: n, Gw: net.IPv4(192, 168, 50, 12), LinkIndex: eth0.Attrs().Index, Protocol: bgp.KubeRouterRouteProtocol}); err != nil {
		t.Fatal(err)
	}

	out := cleanupIn(t, ns, "--kube-router-leftovers", "--keep-nfrouter")
	for _, want := range []string{
		"removed kube-router's nftables table ip kube-router-filter-ipv4",
		"removed iptables-nft rule in ip filter FORWARD that jumps to KUBE-ROUTER-FORWARD",
		"removed iptables-nft rule in ip nat POSTROUTING that matches ipset kube-router-pod-subnets",
		"removed iptables-nft rule in ip6 filter INPUT that jumps to KUBE-ROUTER-INPUT",
		"removed iptables-nft chain KUBE-POD-FW-4YUTZOZTS6YGRL7T in ip filter",
		"removed iptables-nft chain KUBE-NWPLCY-ZTAUFDFGO5OJFNSR in ip filter",
		"removed kube-router's ipset KUBE-SRC-3BRXDSPLUFVDDXNF",
		"removed kube-router's ipset inet6:kube-router-pod-subnets",
		"removed kube-router's route 10.244.2.0/24 (protocol 17, table 254)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("cleanup did not say %q:\n%s", want, out)
		}
	}
	after := snapshot(t, ns)
	if extra, missing := diff(after, before); len(extra) != 0 || len(missing) != 0 {
		t.Errorf("after cleanup the namespace differs from before kube-router's objects:\n left: %v\n removed too: %v", extra, missing)
	}
	if sets := listSets(); sets != setsBefore {
		t.Errorf("ipsets after cleanup:\n%s\nwant:\n%s", sets, setsBefore)
	}
	if out := cleanupIn(t, ns, "--kube-router-leftovers", "--keep-nfrouter"); out != "nothing to do\n" {
		t.Errorf("second cleanup: %q, want nothing to do", out)
	}
}

// TestCleanupSaysWhatItCannotRemove: kube-router's chains in iptables-legacy
// (x_tables) are out of netlink's reach; cleanup says so and how to remove
// them, and leaves them.
func TestCleanupSaysWhatItCannotRemove(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	runIn(t, ns, "iptables-legacy", "-N", "KUBE-ROUTER-INPUT")
	runIn(t, ns, "iptables-legacy", "-A", "INPUT", "-j", "KUBE-ROUTER-INPUT")
	out := cleanupIn(t, ns, "--kube-router-leftovers")
	for _, want := range []string{"nothing to do\n", "not removed: this node has iptables-legacy (x_tables) tables (iptables-legacy: filter)",
		"kube-router --cleanup-config", "iptables-legacy -X NAME"} {
		if !strings.Contains(out, want) {
			t.Errorf("cleanup output lacks %q:\n%s", want, out)
		}
	}
	if rules := runIn(t, ns, "iptables-legacy", "-S", "INPUT"); !strings.Contains(rules, "-j KUBE-ROUTER-INPUT") {
		t.Errorf("the legacy rule is gone:\n%s", rules)
	}
	if out := cleanupIn(t, ns); out != "nothing to do\n" {
		t.Errorf("cleanup without --kube-router-leftovers: %q", out)
	}
}
