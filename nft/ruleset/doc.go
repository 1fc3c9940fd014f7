// Package ruleset is the desired-state model of nfrouter's nftables table: the
// chains, rules, sets, maps and elements that planners want programmed.
//
// # Planners and the applier
//
// Several planners (the NetworkPolicy firewall today, the service proxy later)
// write into one Table, each owning the objects whose names it chose. The table
// keeps a journal of the chains and sets that changed since the applier last
// took it (TakeDirty), so that an incremental sync diffs only those objects;
// a full sync diffs everything against what the kernel holds.
//
// # Rules
//
// A Rule is a list of matches and a verdict drawn from a small closed vocabulary
// (Match, Verdict). Each item renders both to the nft text that `nft list
// ruleset` prints and to the exact netlink expression sequence that nft itself
// generates for that text (checked with `nft --debug=netlink`), so the kernel
// never holds an expression nft cannot print, and the dry-run text, the golden
// files and the kernel's listing are one format.
//
// # Elements
//
// Set elements are small comparable values (Element) counted per contributor:
// a planner may add the same element for several reasons (two policies isolate
// one pod) and the element stays until the last reason is gone. A set keeps
// its elements packed (ElementCounts): 16 bytes for an IPv4 element instead
// of an Element's 128, which is most of the table's memory at scale.
package ruleset
