// Package vmsmoke is the VM tier's smoke suite: it shows that a guest kernel
// has what nfrouter programs — IPVS with every scheduler nfrouter supports,
// dummy interfaces with addresses, ipip tunnels, nftables — and that a TCP
// connection really flows through an IPVS virtual service between two
// network namespaces.
//
// The tests also run in plain "go test ./..." on the host: there they skip
// when not root or when the host kernel lacks a feature (see package
// kerneltest), and in a guest such an absence fails them.
package vmsmoke
