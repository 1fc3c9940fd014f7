package nft

import (
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// newFirewallIn returns a backend with only the firewall part, programming
// namespace ns.
func newFirewallIn(t testing.TB, ns netns.NsHandle, defaultDeny bool) *Backend {
	t.Helper()
	return newBackendIn(t, ns, func(tbl *ruleset.Table) Part {
		f, err := NewFirewall(tbl, FirewallConfig{NodeName: "node-a", DefaultDeny: defaultDeny, NetNSFd: int(ns)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}

// newBackendIn returns a backend programming namespace ns with the parts
// newParts makes.
func newBackendIn(t testing.TB, ns netns.NsHandle, newParts ...func(*ruleset.Table) Part) *Backend {
	t.Helper()
	b, err := New(Config{NetNSFd: int(ns)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, np := range newParts {
		b.Add(np(b.Table()))
	}
	return b
}

// renderFirewall renders what the firewall alone plans for st.
func renderFirewall(t testing.TB, st *model.State, cfg FirewallConfig) string {
	t.Helper()
	var b bytes.Buffer
	err := Render(t.Context(), &b, st, func(tbl *ruleset.Table) ([]Part, error) {
		f, err := NewFirewall(tbl, cfg)
		return []Part{f}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func syncOK(t testing.TB, f *Backend, st *model.State, ch *model.Changes) Stats {
	t.Helper()
	if err := f.Sync(t.Context(), st, ch); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return f.LastStats()
}

// nftIn runs the nft binary in namespace ns. Tests that need it skip on a
// host without it and fail in a VM guest, which gets it through
// testdata/vm-tools.
func nftIn(t testing.TB, ns netns.NsHandle, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("nft")
	if err != nil {
		if kerneltest.InGuest() {
			t.Fatalf("nft binary missing in the guest (listed in testdata/vm-tools): %v", err)
		}
		t.Skip("nft binary not installed (make setup installs Debian's nftables)")
	}
	var out, errb bytes.Buffer
	err = kerneltest.Do(ns, func() error {
		// The child inherits the namespace of this locked thread.
		cmd := exec.Command(path, args...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &out, &errb
		return cmd.Run()
	})
	if err != nil {
		t.Fatalf("nft %s: %v\n%s\ninput:\n%s", strings.Join(args, " "), err, errb.String(), stdin)
	}
	return out.String()
}

// protoNumbers matches protocol numbers in listed concatenations: nft names
// them from /etc/protocols, which a VM guest does not have.
var protoNumbers = strings.NewReplacer(" . 6 . ", " . tcp . ", " . 17 . ", " . udp . ", " . 132 . ", " . sctp . ",
	"meta l4proto 6 ", "meta l4proto tcp ", "meta l4proto 17 ", "meta l4proto udp ", "meta l4proto 132 ", "meta l4proto sctp ")

// counterValues are what traffic made of a counter.
var counterValues = regexp.MustCompile(`counter packets \d+ bytes \d+`)

// normalize makes two nft listings comparable: elements sorted and on one
// line, protocols by name, counters at zero, objects sorted by their first
// line.
func normalize(text string) string {
	text = protoNumbers.Replace(text)
	text = counterValues.ReplaceAllString(text, "counter packets 0 bytes 0")
	var lines []string
	var acc string
	for _, l := range strings.Split(text, "\n") {
		if acc != "" {
			acc += " " + strings.TrimSpace(l)
			if strings.Contains(l, "}") {
				lines = append(lines, sortElements(acc))
				acc = ""
			}
			continue
		}
		if strings.Contains(l, "elements = {") && !strings.Contains(l, "}") {
			acc = strings.TrimSpace(l)
			continue
		}
		if strings.Contains(l, "elements = {") {
			l = sortElements(strings.TrimSpace(l))
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	var blocks []string
	var cur []string
	for _, l := range lines {
		if l == "" {
			continue
		}
		cur = append(cur, l)
		if l == "}" {
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	slices.Sort(blocks)
	return strings.Join(blocks, "\n\n") + strings.Join(cur, "\n")
}

func sortElements(l string) string {
	i, j := strings.Index(l, "{"), strings.LastIndex(l, "}")
	els := strings.Split(l[i+1:j], ",")
	for k := range els {
		els[k] = strings.TrimSpace(els[k])
	}
	slices.Sort(els)
	return "elements = { " + strings.Join(els, ", ") + " }"
}
