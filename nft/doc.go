// Package nft programs nfrouter's nftables table: the NetworkPolicy firewall,
// the nftables service proxy (or the IPVS proxy's NAT helpers) and pod
// egress masquerading, all in one atomic netlink transaction per sync.
//
// # Layers
//
//   - nft/ruleset: the desired objects (chains, rules, sets, elements) and
//     their nft text. Pure.
//   - nft/netpol: the firewall planner, model.State → ruleset.Table,
//     incremental. Pure. Its package comment describes the ruleset layout.
//   - nft/svcproxy: the nftables service proxy planner (--service-proxy=
//     nftables): endpoints in map slots, services grouped by endpoint count,
//     session affinity in dynamic maps. Pure; its package comment describes
//     its layout.
//   - nft/egress: pod egress masquerading.
//   - nft/kuberouter: removes what kube-router leaves in netfilter (ipsets,
//     iptables-nft chains and the rules that use them, its nftables tables),
//     for nodes switching from it.
//   - nft/nflog: reads the packets the firewall logs before it drops them
//     (`nfrouter denials`).
//   - this package: the applier (diff against an element-level cache of what is
//     programmed, one batch per sync, read-back and repair on full syncs), the
//     netlink transport, metrics, and Backend, the watch backend, which
//     composes Parts: Firewall, ServiceProxy, and the parts of other
//     packages (the IPVS proxy's NAT helpers).
//     Cleanup (cleanup.go) deletes the table, for `nfrouter cleanup`.
//
// Each part writes its own objects into the one ruleset.Table under names of
// its own (the service proxy's all start with "service"); the applier does
// not care who wrote an object, so all land in one transaction.
//
// # Kernel quirks
//
//   - One netlink batch is atomic: the kernel holds the old table or the new
//     one. The batch is sent as one datagram with acknowledgements switched off
//     and a GETGEN request as a fence behind it (see transport): google/nftables
//     reads one acknowledgement per message, ~0.3 ms each.
//   - Socket buffers are raised (SO_SNDBUFFORCE/SO_RCVBUFFORCE) to fit the
//     batch, and elements go in chunks of 2,000 per message: otherwise large
//     batches fail with EMSGSIZE or ENOBUFS.
//   - A chain that map elements jumped to is flushed at once and deleted by
//     the next sync: kernels before 6.2 drop such references only after the
//     transaction that deleted the elements.
//   - google/nftables cannot write chain comments; the applier appends
//     NFTA_CHAIN_USERDATA (Linux ≥ 5.10) to the chain message itself.
//   - Every set is written as nft 1.0.6 writes it for the dry-run text, down
//     to the attributes the kernel keeps (TestKernelObjectsAreNftsOwn
//     compares them): when `nft -f` adds a set that exists, the kernel
//     refuses any difference in flags, types, lengths or concatenation
//     fields with EEXIST. So a hashed concatenation gets neither
//     NFT_SET_CONCAT nor field lengths (nft gives them only to interval
//     sets), and the userdata is replaced with nft's TLVs (typeof.go): key
//     and data byte order, the typeof description (an empty concatenation
//     for keys declared by type names, the expressions for a typeof key such
//     as the slot numgen yields, which google/nftables cannot declare), a
//     data-interval flag for maps, and the comment.
//   - Element messages are the applier's own (setelem.go): nft marks the
//     start of an interval that runs to the top of the address space as open
//     in the element's userdata, which google/nftables cannot write.
//   - google/nftables' ct expression sends no direction for the typed
//     address keys (`ct original ip daddr`), which the kernel refuses; no
//     rule uses them.
//   - Dynamic sets (filled by `update @set` in the packet path) are never
//     diffed or repaired. The service proxy deletes the affinity entries of
//     endpoints that went after the transaction, by element
//     (servicestale.go); Table.FlushSet flushes one in the transaction.
//   - Conntrack entries are deleted over netlink by package nft/conntrack,
//     shared by the firewall (flows a policy starts denying), the service
//     proxy and the IPVS proxy (UDP and SCTP flows whose endpoint went),
//     always after the kernel holds the change (Applied), never failing a
//     sync.
//   - Interval sets are written the way nft writes them (a leading end element
//     at address zero, ranges as start and one-past-the-end) so that `nft list`
//     prints them as prefixes and ranges, and are rewritten whole on change.
//
// Only our table is ever listed, written or deleted; whatever else is in the
// ruleset is left alone.
package nft
