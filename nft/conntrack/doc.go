// Package conntrack deletes conntrack entries over netlink (vishvananda/netlink,
// NETLINK_NETFILTER), never by running conntrack(8). It is the one place
// where nfrouter touches the conntrack table: the firewall deletes flows a
// policy starts denying, both service proxies (nftables and IPVS) delete
// UDP and SCTP flows whose endpoint went.
//
// # Why services need it
//
// Conntrack keeps the NAT decision of a connection for its lifetime; a UDP
// "connection" lives as long as its client keeps sending (DNS, syslog,
// QUIC: for ever). So when an endpoint goes, a client that keeps sending
// keeps being translated to the dead address; and when a service address
// was rejected (no endpoint) or went untranslated, the entry of that state
// outlives the endpoint that arrives. TCP ends such flows itself (a reset,
// a timeout); UDP and SCTP do not, which is why kube-proxy deletes their
// entries, and so do we.
//
// # How
//
// [DeleteStaleServiceFlows] is declarative: it gets every UDP and SCTP
// service address with the endpoints it sends to now, dumps the conntrack
// table once per family and deletes the entries whose original destination
// is one of those addresses and whose reply comes from somewhere else: a
// translated flow to an endpoint that is gone, or an untranslated one to an
// address that has endpoints now. Because the filter is built from the
// whole desired state, not from the last change, a pass that failed, or a
// restart of nfrouter, is made good by the next pass.
//
// The kernel deletes the entries while it dumps them
// (IPCTNL_MSG_CT_DELETE per match); the pass costs one walk of the table.
package conntrack
