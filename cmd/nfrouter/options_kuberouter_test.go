package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's kube-router flag table from kubeRouterFlags")

// TestKubeRouterFlagTableCoversKubeRouter: the table has one row per flag of
// kube-router 2.x, no more.
func TestKubeRouterFlagTableCoversKubeRouter(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "kube-router-v2-flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			theirs = append(theirs, l)
		}
	}
	var ours []string
	for _, f := range kubeRouterFlags {
		ours = append(ours, f.name)
	}
	slices.Sort(theirs)
	slices.Sort(ours)
	if len(theirs) != 79 {
		t.Errorf("testdata lists %d kube-router flags, want kube-router 2.11's 79", len(theirs))
	}
	if !slices.Equal(theirs, ours) {
		t.Errorf("table and kube-router differ:\n only kube-router: %v\n only the table: %v", minus(theirs, ours), minus(ours, theirs))
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// sampleValue is a value of kind that no refused flag accepts.
func sampleValue(k flagKind, def string) string {
	switch k {
	case kindBool:
		if def == "true" {
			return "false"
		}
		return "true"
	case kindDuration:
		return "42s"
	case kindStrings:
		return "10.1.0.0/16,10.2.0.0/16"
	case kindUint:
		return "7"
	default:
		return "something-else"
	}
}

// TestEveryKubeRouterFlagIsHandledAsTheTableSays feeds each row's flag to
// the parser: implemented ones parse with no warning, ignored ones parse and
// are named for the warning, refused ones parse at their accepted values and
// fail otherwise, naming the flag and the missing feature.
func TestEveryKubeRouterFlagIsHandledAsTheTableSays(t *testing.T) {
	counts := map[flagStatus]int{}
	for _, f := range kubeRouterFlags {
		counts[f.status]++
		switch f.status {
		case flagImplemented:
			if f.kind != kindBool || f.def != "" || f.accept != nil || f.missing != "" {
				t.Errorf("--%s: an implemented flag takes nfrouter's own type and default, not the table's", f.name)
			}
			args := f.example
			if args == nil {
				args = []string{"--" + f.name + "=" + implementedSample(t, f.name)}
			}
			o, err := parseOptions(args)
			var help *helpRequested
			if f.name == "help" {
				if !errors.As(err, &help) {
					t.Errorf("%v: %v, want the usage", args, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			if len(o.ignoredFlags) != 0 {
				t.Errorf("%v: warned about %v", args, o.ignoredFlags)
			}
		case flagIgnored:
			arg := "--" + f.name + "=" + sampleValue(f.kind, f.def)
			if f.example != nil {
				t.Errorf("--%s: examples are for implemented flags", f.name)
			}
			o, err := parseOptions([]string{arg})
			if err != nil {
				t.Errorf("%s: %v", arg, err)
				continue
			}
			if !slices.Equal(o.ignoredFlags, []string{"--" + f.name}) {
				t.Errorf("%s: warned about %v, want exactly it", arg, o.ignoredFlags)
			}
		case flagRefused:
			if len(f.accept) == 0 || f.missing == "" {
				t.Errorf("--%s: a refused flag names the values it accepts and the feature nfrouter lacks", f.name)
			}
			for _, v := range f.accept {
				o, err := parseOptions([]string{"--" + f.name + "=" + v})
				if err != nil || len(o.ignoredFlags) != 0 {
					t.Errorf("--%s=%s: %v, %+v; want accepted silently", f.name, v, err, o)
				}
			}
			arg := "--" + f.name + "=" + sampleValue(f.kind, "")
			if f.kind == kindBool && f.accept[0] == "true" {
				arg = "--" + f.name + "=false"
			}
			_, err := parseOptions([]string{arg})
			if err == nil || !strings.Contains(err.Error(), arg) || !strings.Contains(err.Error(), f.missing) {
				t.Errorf("%s: %v; want an error naming it and %q", arg, err, f.missing)
			}
		}
	}
	// A table that lost its rows of one status would pass the loop.
	if counts[flagImplemented] < 40 || counts[flagIgnored] < 10 || counts[flagRefused] < 5 {
		t.Errorf("rows by status: %v", counts)
	}
}

// implementedSample is a valid value for an implemented flag of nfrouter,
// by its type.
func implementedSample(t *testing.T, name string) string {
	t.Helper()
	switch name {
	case "hostname-override", "kubeconfig", "master", "metrics-addr", "health-addr":
		return "x"
	case "metrics-path":
		return "/m"
	case "service-node-port-range":
		return "30000:32767"
	case "overlay-type":
		return "full"
	case "cluster-asn", "bgp-port", "peer-router-multihop-ttl", "metrics-port", "health-port":
		return "200"
	case "bgp-holdtime", "bgp-graceful-restart-time", "bgp-graceful-restart-deferral-time", "cache-sync-timeout",
		"ipvs-graceful-period", "routes-sync-period", "injected-routes-sync-period":
		return "30s"
	}
	return "true"
}

// TestKubeRouterFlagsOtherEffects checks the implemented flags whose effect
// is not a same-named nfrouter setting.
func TestKubeRouterFlagsOtherEffects(t *testing.T) {
	o, err := parseOptions([]string{"--ipvs-graceful-termination=false", "--ipvs-graceful-period=10s"})
	if err != nil || o.proxy.gracePeriod != 0 {
		t.Errorf("--ipvs-graceful-termination=false: grace %v, %v; want 0 (delete at once)", o.proxy.gracePeriod, err)
	}
	o, err = parseOptions([]string{"--ipvs-graceful-period=10s"})
	if err != nil || o.proxy.gracePeriod.Seconds() != 10 {
		t.Errorf("--ipvs-graceful-period=10s alone: grace %v, %v", o.proxy.gracePeriod, err)
	}
	o, err = parseOptions([]string{"--routes-sync-period=5m", "--injected-routes-sync-period=20s"})
	if err != nil || o.router.routesSyncPeriod.Seconds() != 20 {
		t.Errorf("--injected-routes-sync-period wins: %v, %v", o.router.routesSyncPeriod, err)
	}
	o, err = parseOptions([]string{"--enable-ibgp=false"})
	if err != nil || o.router.enableIBGP {
		t.Errorf("--enable-ibgp=false: %+v, %v", o.router, err)
	}
	if _, err := parseOptions([]string{"--router-id=generate"}); err == nil || !strings.Contains(err.Error(), "generated router IDs") {
		t.Errorf("--router-id=generate: %v", err)
	}
	if _, err := parseOptions([]string{"--enable-pprof"}); err == nil || !strings.Contains(err.Error(), "--metrics-port") {
		t.Errorf("--enable-pprof without --metrics-port: %v", err)
	}
	o, err = parseOptions([]string{"-V"})
	if err != nil || !o.version {
		t.Errorf("-V: %v, %v", o, err)
	}
}

// TestIgnoredKubeRouterFlagsAreNamedInOneWarning runs the agent (dry run)
// with every ignored flag: one warning line names them all.
func TestIgnoredKubeRouterFlagsAreNamedInOneWarning(t *testing.T) {
	args := []string{"--manifests", filepath.Join("..", "..", "deploy", "examples"), "--hostname-override", "node-1",
		"--dry-run", "--log-format", "json"}
	var want []string
	for _, f := range kubeRouterFlags {
		switch f.status {
		case flagIgnored:
			args = append(args, "--"+f.name+"="+sampleValue(f.kind, f.def))
			want = append(want, "--"+f.name)
		case flagRefused:
			args = append(args, "--"+f.name+"="+f.accept[0])
		}
	}
	code, _, stderr := runCommand(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var warnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "kube-router flags") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("%d warnings about kube-router flags, want 1:\n%s", len(warnings), stderr)
	}
	for _, w := range want {
		if !strings.Contains(warnings[0], `"`+w+`"`) {
			t.Errorf("warning does not name %s: %s", w, warnings[0])
		}
	}
}

// kubeRouterExamples are the argument lists of kube-router's published
// example DaemonSets (daemonset/*.yaml at v2.11), as facts. Where an example
// says <CHANGE ME>, a documentation address or ASN stands in.
var kubeRouterExamples = map[string][]string{
	"generic-kuberouter-all-features-advertise-routes.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig", "--peer-router-ips=10.1.201.254",
		"--peer-router-asns=64512", "--cluster-asn=64512", "--advertise-cluster-ip=true"},
	"generic-kuberouter-all-features.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"generic-kuberouter-only-advertise-routes.yaml": {"--run-router=true", "--run-firewall=false", "--run-service-proxy=false",
		"--bgp-graceful-restart=true", "--enable-cni=false", "--enable-ibgp=false", "--enable-overlay=false",
		"--peer-router-ips=192.0.2.1", "--peer-router-asns=64513", "--cluster-asn=64512",
		"--advertise-cluster-ip=true", "--advertise-external-ip=true", "--advertise-loadbalancer-ip=true"},
	"generic-kuberouter.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=false", "--bgp-graceful-restart=true"},
	"kube-router-all-service-daemonset-advertise-routes.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig", "--advertise-cluster-ip=true",
		"--cluster-asn=64512", "--peer-router-ips=192.168.1.99", "--peer-router-asns=64513"},
	"kube-router-all-service-daemonset.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"kube-router-firewall-daemonset.yaml": {"--run-router=false", "--run-firewall=true", "--run-service-proxy=false",
		"--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"kube-router-proxy-daemonset.yaml": {"--run-router=false", "--run-firewall=false", "--run-service-proxy=true",
		"--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"kubeadm-kuberouter-all-features-dsr.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig",
		"--runtime-endpoint=unix:///run/containerd/containerd.sock"},
	"kubeadm-kuberouter-all-features-hostport.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"kubeadm-kuberouter-all-features.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=true",
		"--bgp-graceful-restart=true", "--kubeconfig=/var/lib/kube-router/kubeconfig"},
	"kubeadm-kuberouter.yaml": {"--run-router=true", "--run-firewall=true", "--run-service-proxy=false", "--bgp-graceful-restart=true"},
}

// TestKubeRouterExampleDaemonSetsParseAndStart parses each example's
// arguments, then starts nfrouter with them (a dry run from the example
// manifests instead of the kubeconfig's API server): exit 0 and a table.
func TestKubeRouterExampleDaemonSetsParseAndStart(t *testing.T) {
	if len(kubeRouterExamples) != 12 {
		t.Fatalf("%d examples, want kube-router's 12", len(kubeRouterExamples))
	}
	for name, args := range kubeRouterExamples {
		o, err := parseOptions(args)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !o.runRouter && !o.runFirewall && !o.runServiceProxy {
			t.Errorf("%s: nothing to run", name)
		}
		var start []string
		for _, a := range args {
			if !strings.HasPrefix(a, "--kubeconfig=") {
				start = append(start, a)
			}
		}
		start = append(start, "--manifests", filepath.Join("..", "..", "deploy", "examples"), "--hostname-override", "node-1",
			"--dry-run", "--log-format", "json")
		code, stdout, stderr := runCommand(t, start...)
		if code != exitOK || !strings.HasPrefix(stdout, "table inet nfrouter {") {
			t.Errorf("%s: exit %d, no table:\n%s", name, code, stderr)
		}
	}
}

// TestREADMEFlagTableIsTheCode: the README's table is rendered from
// kubeRouterFlags (go test ./cmd/nfrouter -run README -update rewrites it).
func TestREADMEFlagTableIsTheCode(t *testing.T) {
	const begin, end = "<!-- kube-router flags: begin (generated: go test ./cmd/nfrouter -run README -update) -->\n", "<!-- kube-router flags: end -->"
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README has no table between %q and %q", begin, end)
	}
	want := compatTableMarkdown()
	if got := text[i+len(begin) : j]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README's kube-router flag table differs from kubeRouterFlags; run with -update. Want:\n%s", want)
	}
}
