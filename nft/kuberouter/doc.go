// Package kuberouter removes what kube-router leaves in a node's netfilter
// state after it stops, so that nfrouter can take the node over: its ipsets
// (through the ipset netlink protocol, NFNL_SUBSYS_IPSET), its nftables
// tables (kube-router-filter-ipv4/-ipv6 of the nftables policy backend), and,
// in the tables that iptables-nft keeps in nftables (ip/ip6 filter, nat,
// mangle, raw), its chains (KUBE-ROUTER-*, KUBE-NWPLCY-*, KUBE-POD-FW-*) with
// every rule elsewhere that jumps to them or matches one of its ipsets.
//
// Nothing else is touched: chains, rules and sets of other names stay, and
// so does every rule that neither jumps to a kube-router chain nor matches a
// kube-router set.
//
// # What netlink cannot reach
//
// Rules written by iptables-legacy live in x_tables, which has no netlink
// interface (only the getsockopt/setsockopt blobs of the iptables binaries).
// LegacyTables reports which legacy tables the namespace has, so that the
// caller can say so and how to remove them.
//
// # Kernel quirks
//
//   - An ipset that a rule still references cannot be destroyed (the kernel
//     answers with IPSET_ERR_REFERENCED): the rules go first, in one nftables
//     batch, then the sets one by one.
//   - iptables-nft stores `-m set --match-set NAME` as an xt "set" match
//     whose info begins with the set's kernel index, not its name; the index
//     is resolved with IPSET_CMD_GET_BYINDEX.
package kuberouter
