package vmsmoke

import (
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// TestNFTablesTable writes a table with a base chain and a set in one
// transaction and reads them back.
func TestNFTablesTable(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatalf("nftables connection: %v", err)
	}
	table := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "nfrouter_smoke"})
	conn.AddChain(&nftables.Chain{
		Name: "forward", Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter,
	})
	set := &nftables.Set{Table: table, Name: "pods", KeyType: nftables.TypeIPAddr}
	want := []netip.Addr{netip.MustParseAddr("10.244.1.2"), netip.MustParseAddr("10.244.1.3")}
	var elems []nftables.SetElement
	for _, a := range want {
		elems = append(elems, nftables.SetElement{Key: a.AsSlice()})
	}
	if err := conn.AddSet(set, elems); err != nil {
		t.Fatalf("add set: %v", err)
	}
	if err := conn.Flush(); err != nil {
		kerneltest.MissingFeature(t, "nftables", err)
	}

	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil || len(tables) != 1 || tables[0].Name != table.Name {
		t.Fatalf("tables read back as %v (%v), want [%s]", tables, err, table.Name)
	}
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil || len(chains) != 1 || chains[0].Name != "forward" || *chains[0].Hooknum != *nftables.ChainHookForward {
		t.Fatalf("chains read back as %v (%v), want one forward base chain", chains, err)
	}
	got, err := conn.GetSetByName(table, set.Name)
	if err != nil {
		t.Fatalf("read set back: %v", err)
	}
	gotElems, err := conn.GetSetElements(got)
	if err != nil {
		t.Fatalf("read set elements back: %v", err)
	}
	var gotAddrs []netip.Addr
	for _, e := range gotElems {
		a, _ := netip.AddrFromSlice(e.Key)
		gotAddrs = append(gotAddrs, a)
	}
	slices.SortFunc(gotAddrs, netip.Addr.Compare)
	if !slices.Equal(gotAddrs, want) {
		t.Errorf("set elements read back as %v, want %v", gotAddrs, want)
	}

	// nft itself must read back what google/nftables wrote (in a guest it
	// comes from testdata/vm-tools).
	if _, err := exec.LookPath("nft"); err != nil {
		if kerneltest.InGuest() {
			t.Fatalf("nft missing in the guest: %v", err)
		}
		t.Logf("nft not installed, ruleset not read back with it: %v", err)
		return
	}
	var out []byte
	err = kerneltest.Do(ns, func() (err error) {
		out, err = exec.Command("nft", "list", "table", "inet", table.Name).CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("nft list table: %v: %s", err, out)
	}
	for _, want := range []string{"set pods", "10.244.1.2", "hook forward priority filter"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("nft list table lacks %q:\n%s", want, out)
		}
	}
}
