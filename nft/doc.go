// Package nft programs nfrouter's nftables table: the NetworkPolicy firewall
// today, the service proxy's NAT objects later, all in one atomic netlink
// transaction per sync.
//
// # Layers
//
//   - nft/ruleset: the desired objects (chains, rules, sets, elements) and
//     their nft text. Pure.
//   - nft/netpol: the firewall planner, model.State → ruleset.Table,
//     incremental. Pure. Its package comment describes the ruleset layout.
//   - this package: the applier (diff against an element-level cache of what is
//     programmed, one batch per sync, read-back and repair on full syncs), the
//     netlink transport, metrics, and Firewall, the watch backend.
//
// Another planner (the service proxy) adds its own objects to the same
// ruleset.Table under names of its own; the applier does not care who wrote
// an object, so both land in one transaction.
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
//   - Interval sets are written the way nft writes them (a leading end element
//     at address zero, ranges as start and one-past-the-end) so that `nft list`
//     prints them as prefixes and ranges, and are rewritten whole on change.
//
// Only our table is ever listed, written or deleted; whatever else is in the
// ruleset is left alone.
package nft
