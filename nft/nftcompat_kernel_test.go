package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// programShape programs shape s into namespace ns with a backend of its own.
func programShape(t testing.TB, ns netns.NsHandle, s shape) *Backend {
	t.Helper()
	b, err := New(Config{NetNSFd: int(ns)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, p := range s.parts(t, b.Table(), int(ns)) {
		b.Add(p)
	}
	syncOK(t, b, s.state, &model.Changes{Full: true})
	return b
}

// ourObjects dumps our table in ns.
func ourObjects(t testing.TB, ns netns.NsHandle) map[string]kernelObject {
	return kernelObjects(t, ns, unix.NFPROTO_INET, TableName)
}

// harmless are the attributes in which the kernel's copy of an object nft
// made from our dry-run text may differ from the copy of the object we made,
// with why it does not matter. Everything else must be equal.
var harmless = []struct {
	kind, attr, why string
}{
	{"*", "handle", "the kernel numbers objects in the order they are made, and nft and nfrouter make them in different orders"},
	{"rule", "position", "the handle of the rule before, numbered as above"},
}

func isHarmless(kind, line string) bool {
	attr, _, _ := strings.Cut(line, " = ")
	for _, h := range harmless {
		if (h.kind == "*" || h.kind == kind) && attr == h.attr {
			return true
		}
	}
	return false
}

// objectDiffs lists the differences between two dumps of a table, but for
// the harmless ones.
func objectDiffs(ours, nfts map[string]kernelObject) []string {
	var diffs []string
	keys := slices.Sorted(maps.Keys(ours))
	for k := range nfts {
		if _, ok := ours[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		o, ok1 := ours[k]
		n, ok2 := nfts[k]
		switch {
		case !ok1:
			diffs = append(diffs, k+": only nft made it")
			continue
		case !ok2:
			diffs = append(diffs, k+": only nfrouter made it")
			continue
		}
		keep := func(lines []string) []string {
			return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return isHarmless(o.kind, l) })
		}
		oa, na := keep(o.attrs), keep(n.attrs)
		if slices.Equal(oa, na) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s:\n    nfrouter: %s\n    nft:      %s", k,
			strings.Join(lineDiff(oa, na), "\n              "), strings.Join(lineDiff(na, oa), "\n              ")))
	}
	return diffs
}

// lineDiff returns the lines of a that b lacks, or "(same lines, other
// order)".
func lineDiff(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return []string{"(same lines, other order or count)"}
	}
	return out
}

// TestKernelObjectsAreNftsOwn programs every golden shape and compares,
// attribute by attribute, what the kernel holds with what it holds after nft
// 1.0.6 loaded the dry-run text of the same shape into another namespace:
// tables, chains, sets and maps (flags, key and data types and lengths,
// descriptions, user data), elements and rules (expressions, user data).
// It compares the kernel's copies rather than the messages: what the kernel
// keeps is what nft lists, what it compares when nft adds an object again,
// and what other tools read.
func TestKernelObjectsAreNftsOwn(t *testing.T) {
	kerneltest.RequireRoot(t)
	for _, s := range compatShapes(t) {
		t.Run(s.name, func(t *testing.T) {
			text := s.render(t)
			ns := kerneltest.NewNetNS(t)
			programShape(t, ns, s)
			byNft := kerneltest.NewNetNS(t)
			nftIn(t, byNft, text, "-f", "-")
			for _, d := range objectDiffs(ourObjects(t, ns), ourObjects(t, byNft)) {
				t.Errorf("%s", d)
			}
		})
	}
}

// TestKernelOldConcatSetIsReplaced gives the table a named-port set the way
// nfrouter wrote them before (NFT_SET_CONCAT and field lengths on a hashed
// concatenation, which makes nft's re-add fail) and checks that a full
// sync replaces it with nft's encoding.
func TestKernelOldConcatSetIsReplaced(t *testing.T) {
	kerneltest.RequireRoot(t)
	var s shape
	for _, c := range allShapes(t) {
		if c.name == "netpol/ports" {
			s = c
		}
	}
	ns := kerneltest.NewNetNS(t)
	b := programShape(t, ns, s)
	const name = "ports4/http.tcp"
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	old := b.Table().Sets[name]
	c.FlushChain(&nftables.Chain{Table: tbl, Name: "np-out/default/ports"})
	c.DelSet(&nftables.Set{Table: tbl, Name: name})
	ks := &nftables.Set{Table: tbl, Name: name, Comment: old.Comment, Concatenation: true}
	ks.KeyType, _ = setDatatype(old.Type)
	if err := c.AddSet(ks, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := nftTry(t, ns, nftIn(t, ns, "", "list", "ruleset"), "-c", "-f", "-"); err == nil {
		t.Fatal("nft -c -f of the listing passes with the old encoding: the test no longer tests anything")
	}
	if st := syncOK(t, b, s.state, &model.Changes{Full: true}); st.Messages == 0 {
		t.Error("full sync left the set of the old encoding alone")
	}
	nftIn(t, ns, nftIn(t, ns, "", "list", "ruleset"), "-c", "-f", "-")
	if st := syncOK(t, b, s.state, &model.Changes{Full: true}); st.Messages != 0 {
		t.Errorf("second full sync sent %d messages (%v), want 0", st.Messages, st.ByType)
	}
}
