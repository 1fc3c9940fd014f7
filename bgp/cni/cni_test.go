package cni

import (
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// decode returns the rendered config as generic JSON.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("rendered config is not JSON: %v\n%s", err, b)
	}
	return m
}

func ranges(cidrs ...string) []any {
	out := []any{}
	for _, c := range cidrs {
		out = append(out, []any{map[string]any{"subnet": c}})
	}
	return out
}

func TestRenderDefault(t *testing.T) {
	out, err := Render(nil, prefixes("10.244.1.0/24", "fd00:1::/64"))
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, out)
	plugins := doc["plugins"].([]any)
	bridge := plugins[0].(map[string]any)
	if bridge["type"] != "bridge" || bridge["bridge"] != "kube-bridge" || bridge["isDefaultGateway"] != true {
		t.Errorf("bridge plugin %v, want kube-router's kube-bridge default gateway", bridge)
	}
	ipam := bridge["ipam"].(map[string]any)
	if ipam["type"] != "host-local" || !reflect.DeepEqual(ipam["ranges"], ranges("10.244.1.0/24", "fd00:1::/64")) {
		t.Errorf("ipam %v, want host-local with one range set per CIDR", ipam)
	}
	if plugins[1].(map[string]any)["type"] != "portmap" {
		t.Errorf("second plugin %v, want portmap", plugins[1])
	}
}

// TestRenderKeepsTheUsersConfig: a config the user wrote (kube-router's
// ConfigMap shapes) keeps every setting; only the bridge's IPAM ranges
// change, an old subnet goes.
func TestRenderKeepsTheUsersConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		bridge       func(map[string]any) map[string]any
	}{
		{"conflist", `{"cniVersion":"0.3.0","name":"mynet","plugins":[
			{"name":"kubernetes","type":"bridge","bridge":"kube-bridge","mtu":1400,"ipam":{"type":"host-local","subnet":"10.9.9.0/24"}},
			{"type":"portmap","capabilities":{"portMappings":true}}]}`,
			func(d map[string]any) map[string]any { return d["plugins"].([]any)[0].(map[string]any) }},
		{"conf", `{"cniVersion":"0.3.0","name":"kubernetes","type":"bridge","bridge":"kube-bridge","mtu":1400}`,
			func(d map[string]any) map[string]any { return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render([]byte(tc.config), prefixes("10.244.2.7/24"))
			if err != nil {
				t.Fatal(err)
			}
			bridge := tc.bridge(decode(t, out))
			if bridge["mtu"] != float64(1400) || bridge["bridge"] != "kube-bridge" {
				t.Errorf("user settings lost: %v", bridge)
			}
			ipam := bridge["ipam"].(map[string]any)
			if _, ok := ipam["subnet"]; ok || !reflect.DeepEqual(ipam["ranges"], ranges("10.244.2.0/24")) {
				t.Errorf("ipam %v, want only ranges of the masked pod CIDR", ipam)
			}
			again, err := Render(out, prefixes("10.244.2.0/24"))
			if err != nil || string(again) != string(out) {
				t.Errorf("rendering the output again changes it:\n%s\n%s", out, again)
			}
		})
	}
}

func TestRenderRefusesWhatItCannotFill(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		cidrs  []netip.Prefix
	}{
		"no cidr":   {"", nil},
		"not json":  {"{", prefixes("10.0.0.0/24")},
		"no bridge": {`{"plugins":[{"type":"ptp"}]}`, prefixes("10.0.0.0/24")},
		"other":     {`{"type":"macvlan"}`, prefixes("10.0.0.0/24")},
	} {
		if _, err := Render([]byte(tc.config), tc.cidrs); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// TestWriter runs the backend on a file: nothing before the node has a pod
// CIDR, the file once it has, no rewrite when nothing changed, a new range
// when the CIDR changes.
func TestWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "net.d", "10-kuberouter.conflist")
	w := &Writer{NodeName: "node-a", Path: path, Log: slog.New(slog.DiscardHandler)}
	state := func(cidrs ...string) *model.State {
		return &model.State{Nodes: model.MapOf(map[string]*model.Node{"node-a": {Name: "node-a", PodCIDRs: prefixes(cidrs...)}})}
	}
	full := &model.Changes{Full: true}
	if err := w.Sync(t.Context(), state(), full); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a config was written before the node had a pod CIDR: %v", err)
	}
	if err := w.Sync(t.Context(), state("10.244.1.0/24"), full); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), `"subnet": "10.244.1.0/24"`) {
		t.Errorf("config lacks the pod CIDR:\n%s", first)
	}
	stat1, _ := os.Stat(path)
	if err := w.Sync(t.Context(), state("10.244.1.0/24"), full); err != nil {
		t.Fatal(err)
	}
	if stat2, _ := os.Stat(path); !os.SameFile(stat1, stat2) {
		t.Error("an unchanged config was replaced")
	}
	if err := w.Sync(t.Context(), state("10.244.3.0/24"), full); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"subnet": "10.244.3.0/24"`) || strings.Contains(string(b), "10.244.1.0") {
		t.Errorf("config after the CIDR changed:\n%s", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the config (no temporary left)", len(entries))
	}
}

// TestHostLocalAllocatesFromTheRenderedConfig hands the rendered bridge
// plugin's config to the reference host-local IPAM plugin (Debian's
// containernetworking-plugins), which allocates from its ranges in a data
// directory of the test: one address from each pod CIDR. It touches no
// network.
func TestHostLocalAllocatesFromTheRenderedConfig(t *testing.T) {
	var plugin string
	for _, dir := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(dir, "host-local")); err == nil {
			plugin = filepath.Join(dir, "host-local")
			break
		}
	}
	if plugin == "" {
		t.Skip("host-local CNI plugin not installed (apt-get install containernetworking-plugins)")
	}
	out, err := Render(nil, prefixes("10.244.1.0/24", "fd00:1::/64"))
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, out)
	bridge := doc["plugins"].([]any)[0].(map[string]any)
	bridge["ipam"].(map[string]any)["dataDir"] = t.TempDir()
	bridge["cniVersion"], bridge["name"] = doc["cniVersion"], doc["name"]
	stdin, err := json.Marshal(bridge)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plugin)
	cmd.Stdin = strings.NewReader(string(stdin))
	cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=nfrouter-test", "CNI_NETNS=/dev/null",
		"CNI_IFNAME=eth0", "CNI_PATH=" + filepath.Dir(plugin)}
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("host-local: %v\n%s", err, res)
	}
	var result struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	if err := json.Unmarshal(res, &result); err != nil {
		t.Fatalf("host-local result: %v\n%s", err, res)
	}
	var got []string
	for _, ip := range result.IPs {
		p, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Masked().String())
	}
	if want := []string{"10.244.1.0/24", "fd00:1::/64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("host-local allocated from %v (%s), want one address from each of %v", got, res, want)
	}
}
