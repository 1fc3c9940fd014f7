package nft

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestKernelNftReloadsOurListing is what an operator does on a node: for
// every golden shape, programmed by nfrouter, in that same namespace
//   - `nft -c -f` of `nft list ruleset` succeeds;
//   - `nft -f` of it changes nothing: every table, chain, set and element
//     keeps its attributes and handle (nft found each the same as what it
//     would add), and every chain just holds its rules twice, the copies
//     equal to the originals but for their handles (rules are appended,
//     and nft encodes the listed rules as we did);
//   - `nft add element` of a new element in nft syntax works in each of
//     our sets and maps.
func TestKernelNftReloadsOurListing(t *testing.T) {
	kerneltest.RequireRoot(t)
	for _, s := range compatShapes(t) {
		t.Run(s.name, func(t *testing.T) {
			ns := kerneltest.NewNetNS(t)
			b := programShape(t, ns, s)
			listing := nftIn(t, ns, "", "list", "ruleset")
			nftIn(t, ns, listing, "-c", "-f", "-")
			before := ourObjects(t, ns)
			nftIn(t, ns, listing, "-f", "-")
			for _, d := range reloadDiffs(before, ourObjects(t, ns)) {
				t.Errorf("nft -f of the listing changed %s", d)
			}

			tbl := b.Table()
			before = ourObjects(t, ns)
			var cmds strings.Builder
			for _, name := range slices.Sorted(maps.Keys(tbl.Sets)) {
				fmt.Fprintf(&cmds, "add element %s %s %s { %s }\n", TableFamily, TableName, name, newElementText(tbl, tbl.Sets[name]))
			}
			nftIn(t, ns, cmds.String(), "-f", "-")
			after := ourObjects(t, ns)
			for name := range tbl.Sets {
				k := "elements " + name
				if len(after[k].attrs) <= len(before[k].attrs) {
					t.Errorf("set %s: nft add element added nothing (%d kernel elements before, %d after)", name, len(before[k].attrs), len(after[k].attrs))
				}
				for _, l := range before[k].attrs {
					if !slices.Contains(after[k].attrs, l) {
						t.Errorf("set %s: nft add element lost %s", name, l)
					}
				}
			}
		})
	}
}

// reloadDiffs lists what differs between dumps of our table before and
// after nft -f of the listing: every chain is expected to hold its rules
// twice, and a chain's use count to grow with the copies of the rules that
// jump to it.
func reloadDiffs(before, after map[string]kernelObject) []string {
	var diffs []string
	rules := map[string]int{}
	for _, o := range before {
		if o.kind == "rule" {
			chain, _, _ := strings.Cut(o.name, "#")
			rules[chain]++
		}
	}
	for k, o := range after {
		b, ok := before[k]
		switch {
		case !ok && o.kind == "rule":
			chain, _, _ := strings.Cut(o.name, "#")
			var i int
			fmt.Sscanf(o.name[len(chain)+1:], "%d", &i)
			orig, ok := before[fmt.Sprintf("rule %s#%d", chain, i-rules[chain])]
			if !ok || !slices.Equal(withoutAttrs(orig.attrs, "handle", "position"), withoutAttrs(o.attrs, "handle", "position")) {
				diffs = append(diffs, fmt.Sprintf("%s: a copy that differs from rule #%d:\n%s\n--- original:\n%s", k, i-rules[chain],
					strings.Join(o.attrs, "\n"), strings.Join(orig.attrs, "\n")))
			}
		case !ok:
			diffs = append(diffs, k+": new")
		case o.kind == "chain":
			if !slices.Equal(withoutAttrs(b.attrs, "use"), withoutAttrs(o.attrs, "use")) {
				diffs = append(diffs, fmt.Sprintf("%s:\n%s\n--- before:\n%s", k, strings.Join(o.attrs, "\n"), strings.Join(b.attrs, "\n")))
			}
		case !slices.Equal(b.attrs, o.attrs):
			diffs = append(diffs, fmt.Sprintf("%s:\n%s\n--- before:\n%s", k, strings.Join(o.attrs, "\n"), strings.Join(b.attrs, "\n")))
		}
	}
	for k, o := range before {
		if _, ok := after[k]; !ok {
			diffs = append(diffs, k+": gone")
		}
		if chain, _, _ := strings.Cut(o.name, "#"); o.kind == "rule" {
			if _, ok := after[fmt.Sprintf("rule %s#%d", chain, rules[chain]*2-1)]; !ok {
				diffs = append(diffs, fmt.Sprintf("chain %s: rules not doubled", chain))
			}
		}
	}
	slices.Sort(diffs)
	return slices.Compact(diffs)
}

func withoutAttrs(lines []string, attrs ...string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		attr, _, _ := strings.Cut(l, " = ")
		return slices.Contains(attrs, attr)
	})
}

// newElementText is an element of set s, in nft syntax, that s does not
// hold: addresses from the documentation ranges (or, in an interval set,
// the first candidate no range covers).
func newElementText(tbl *ruleset.Table, s *ruleset.Set) string {
	v6 := s.Type.V6()
	addr := func(i int) netip.Addr {
		if v6 {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)})
		}
		return netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
	}
	a := addr(1)
	if s.Interval {
		candidates := []netip.Addr{a, netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("169.254.169.254")}
		if v6 {
			candidates = []netip.Addr{a, netip.MustParseAddr("fe80::1"), netip.MustParseAddr("::1")}
		}
		a = candidates[0]
		for _, c := range candidates {
			if !slices.ContainsFunc(ruleset.SortedElements(s), func(e ruleset.Element) bool {
				return e.Addr.Compare(c) <= 0 && c.Compare(e.End) <= 0
			}) {
				a = c
				break
			}
		}
	}
	var key string
	switch s.Type {
	case ruleset.AddrProtoPort4, ruleset.AddrProtoPort6:
		key = fmt.Sprintf("%s . tcp . 1", a)
	case ruleset.AddrPair4, ruleset.AddrPair6, ruleset.AddrPort4, ruleset.AddrPort6:
		key = fmt.Sprintf("%s . %s", a, addr(2))
		if s.Type == ruleset.AddrPort4 || s.Type == ruleset.AddrPort6 {
			key = fmt.Sprintf("%s . 1", a)
		}
	case ruleset.EndpointSlot4, ruleset.EndpointSlot6:
		key = fmt.Sprintf("%s . tcp . 1 . 0", a)
	default:
		key = a.String()
	}
	switch {
	case s.Verdict:
		chains := slices.Sorted(maps.Keys(tbl.Chains))
		i := slices.IndexFunc(chains, func(c string) bool { return tbl.Chains[c].Base == nil })
		return key + " : jump " + chains[i]
	case s.Data == ruleset.AddrPort4 || s.Data == ruleset.AddrPort6:
		return fmt.Sprintf("%s : %s . 80", key, addr(2))
	case s.Data != 0:
		return fmt.Sprintf("%s : %s", key, addr(2))
	}
	return key
}

// nftTry runs nft in namespace ns and returns its standard error, and
// whether it failed.
func nftTry(t testing.TB, ns netns.NsHandle, stdin string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("nft")
	if err != nil {
		nftIn(t, ns, "", "--version") // skips or fails as nftIn does
	}
	var errb bytes.Buffer
	err = kerneltest.Do(ns, func() error {
		cmd := exec.Command(path, args...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stderr = &errb
		return cmd.Run()
	})
	return errb.String(), err
}
