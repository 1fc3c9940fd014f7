package kuberouter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"

	"github.com/nfrouter/nfrouter/nft/internal/nftconn"
)

// table names an nftables table.
type table struct {
	family nftables.TableFamily
	name   string
}

// kube-router's nftables tables (its experimental nftables policy backend).
var nftTables = []table{
	{nftables.TableFamilyIPv4, "kube-router-filter-ipv4"},
	{nftables.TableFamilyIPv6, "kube-router-filter-ipv6"},
}

// isKubeRouterChain reports whether kube-router names an iptables chain so.
func isKubeRouterChain(name string) bool {
	for _, p := range []string{"KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Cleanup removes kube-router's leftovers from the network namespace netnsFd
// (0: the caller's) and returns one line per object removed. It goes on
// after a failure and returns every error joined.
func Cleanup(netnsFd int) ([]string, error) {
	conn, err := nftconn.Open(netnsFd)
	if err != nil {
		return nil, fmt.Errorf("open nftables netlink: %w", err)
	}
	sets, err := dialIPSet(netnsFd)
	if err != nil {
		return nil, err
	}
	defer sets.Close()

	var removed []string
	var errs []error
	r, err := removeTables(conn)
	removed, errs = append(removed, r...), append(errs, err)
	r, err = removeIptablesNFT(conn, sets)
	removed, errs = append(removed, r...), append(errs, err)
	// The rules that used them are gone: now the sets can go.
	r, err = removeSets(sets)
	removed, errs = append(removed, r...), append(errs, err)
	return removed, errors.Join(errs...)
}

func removeTables(conn *nftables.Conn) ([]string, error) {
	tables, err := conn.ListTables()
	if err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	var removed []string
	for _, want := range nftTables {
		if !slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Family == want.family && t.Name == want.name }) {
			continue
		}
		conn.DelTable(&nftables.Table{Family: want.family, Name: want.name})
		removed = append(removed, fmt.Sprintf("kube-router's nftables table %s %s", familyName(want.family), want.name))
	}
	if len(removed) == 0 {
		return nil, nil
	}
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("delete kube-router's nftables tables: %w", err)
	}
	return removed, nil
}

// removeIptablesNFT deletes, in the ip and ip6 tables that iptables-nft
// keeps, every rule outside kube-router's chains that jumps to one of them or
// matches one of its sets, then the chains themselves: one batch.
func removeIptablesNFT(conn *nftables.Conn, sets *ipsetConn) ([]string, error) {
	tables, err := conn.ListTables()
	if err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	chains, err := conn.ListChains()
	if err != nil {
		return nil, fmt.Errorf("list nftables chains: %w", err)
	}
	setNames := map[uint16]string{}
	nameOf := func(index uint16) (string, error) {
		if n, ok := setNames[index]; ok {
			return n, nil
		}
		n, err := sets.nameOf(index)
		if err == nil {
			setNames[index] = n
		}
		return n, err
	}
	var removed []string
	for _, t := range tables {
		if t.Family != nftables.TableFamilyIPv4 && t.Family != nftables.TableFamilyIPv6 || isKubeRouterTable(t) {
			continue
		}
		var theirs, others []*nftables.Chain
		for _, c := range chains {
			if c.Table.Family != t.Family || c.Table.Name != t.Name {
				continue
			}
			if isKubeRouterChain(c.Name) {
				theirs = append(theirs, c)
			} else {
				others = append(others, c)
			}
		}
		for _, c := range others {
			rules, err := conn.GetRules(t, c)
			if err != nil {
				return nil, fmt.Errorf("list rules of %s %s %s: %w", familyName(t.Family), t.Name, c.Name, err)
			}
			for _, r := range rules {
				why, err := kubeRouterRule(t.Name, c.Name, r, nameOf)
				if err != nil {
					return nil, fmt.Errorf("rule %d of %s %s %s: %w", r.Handle, familyName(t.Family), t.Name, c.Name, err)
				}
				if why == "" {
					continue
				}
				if err := conn.DelRule(r); err != nil {
					return nil, err
				}
				removed = append(removed, fmt.Sprintf("iptables-nft rule in %s %s %s that %s", familyName(t.Family), t.Name, c.Name, why))
			}
		}
		// Flush them all before deleting any: they jump to each other.
		for _, c := range theirs {
			conn.FlushChain(c)
		}
		for _, c := range theirs {
			conn.DelChain(c)
			removed = append(removed, fmt.Sprintf("iptables-nft chain %s in %s %s", c.Name, familyName(t.Family), t.Name))
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("delete kube-router's iptables-nft chains and rules: %w", err)
	}
	return removed, nil
}

func isKubeRouterTable(t *nftables.Table) bool {
	return slices.Contains(nftTables, table{t.Family, t.Name})
}

// kubeRouterRule says why r, a rule of chain in table, is kube-router's
// ("jumps to KUBE-ROUTER-INPUT", "matches ipset kube-router-pod-subnets"), or
// "" when it is not.
func kubeRouterRule(table, chain string, r *nftables.Rule, nameOf func(uint16) (string, error)) (string, error) {
	for _, e := range r.Exprs {
		switch e := e.(type) {
		case *expr.Match:
			if e.Name == "ipvs" && table == "nat" && chain == "POSTROUTING" {
				// kube-router's masquerade of IPVS traffic (-m ipvs
				// --vdir ORIGINAL --vmethod MASQ … -j SNAT), written
				// straight into POSTROUTING: nobody else matches IPVS
				// connections there.
				return "masquerades IPVS connections (kube-router's -m ipvs rule)", nil
			}
			if e.Name != "set" {
				continue
			}
			info, ok := e.Info.(*xt.Unknown)
			if !ok || len(*info) < 2 {
				continue
			}
			// Every revision of xt_set's match info starts with the
			// set's index (ip_set_id_t, host order).
			name, err := nameOf(binary.NativeEndian.Uint16((*info)[:2]))
			if err != nil {
				return "", err
			}
			if isKubeRouterSet(name) {
				return "matches ipset " + name, nil
			}
		case *expr.Verdict:
			if (e.Kind == expr.VerdictJump || e.Kind == expr.VerdictGoto) && isKubeRouterChain(e.Chain) {
				return "jumps to " + e.Chain, nil
			}
		}
	}
	return "", nil
}

// removeSets destroys kube-router's ipsets.
func removeSets(sets *ipsetConn) ([]string, error) {
	names, err := sets.names()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, n := range names {
		if !isKubeRouterSet(n) {
			continue
		}
		if err := sets.destroy(n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "kube-router's ipset "+n)
	}
	return removed, errors.Join(errs...)
}

// LegacyTables returns the iptables-legacy (x_tables) tables that exist in
// the caller's network namespace, per family ("iptables": [filter nat]).
// Their rules cannot be read or removed through netlink.
func LegacyTables() map[string][]string {
	out := map[string][]string{}
	for tool, file := range map[string]string{"iptables": "/proc/thread-self/net/ip_tables_names", "ip6tables": "/proc/thread-self/net/ip6_tables_names"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if names := strings.Fields(string(b)); len(names) > 0 {
			slices.Sort(names)
			out[tool] = names
		}
	}
	return out
}

func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	default:
		return fmt.Sprintf("family-%d", f)
	}
}
