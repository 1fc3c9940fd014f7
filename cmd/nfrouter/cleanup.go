package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nfrouter/nfrouter/bgp"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/kuberouter"
)

// cleanupOptions are the flags of `nfrouter cleanup`.
type cleanupOptions struct {
	kubeRouterLeftovers bool
	keepNFRouter        bool
	nodePortRange       string
	cniConfFile         string

	// Parsed by parseCleanupOptions.
	nodePortMin, nodePortMax uint16
}

func parseCleanupOptions(args []string) (*cleanupOptions, error) {
	co := &cleanupOptions{}
	fs := newCommandFlags("cleanup")
	fs.BoolVar(&co.kubeRouterLeftovers, "kube-router-leftovers", false, "Also remove what kube-router leaves behind: its ipsets, nftables tables, iptables-nft chains (and the rules that jump to them or match its ipsets), routes and ipip tunnels.")
	fs.BoolVar(&co.keepNFRouter, "keep-nfrouter", false, "Leave nfrouter's own objects (with --kube-router-leftovers, while nfrouter runs on the node).")
	fs.StringVar(&co.nodePortRange, "service-node-port-range", "30000-32767", "The cluster's NodePort range: IPVS services on the node's addresses in it are nfrouter's.")
	fs.StringVar(&co.cniConfFile, "cni-conf-file", "", "The CNI configuration file nfrouter wrote, to remove; none by default.")
	if err := parseCommandFlags(fs, "Usage of nfrouter cleanup (removes, in this network namespace, what nfrouter programmed; prints what it removed):\n", args); err != nil {
		return nil, err
	}
	var err error
	if co.nodePortMin, co.nodePortMax, err = parsePortRange(co.nodePortRange); err != nil {
		return nil, fmt.Errorf("--service-node-port-range: %w", err)
	}
	if co.keepNFRouter && !co.kubeRouterLeftovers {
		return nil, errors.New("--keep-nfrouter without --kube-router-leftovers leaves nothing to do")
	}
	return co, nil
}

// runCleanup is `nfrouter cleanup`.
func runCleanup(_ context.Context, args []string, stdout, stderr io.Writer) int {
	co, err := parseCleanupOptions(args)
	if code, done := flagsDone("nfrouter cleanup", err, stdout, stderr); done {
		return code
	}
	if err := cleanup(co, stdout); err != nil {
		fmt.Fprintf(stderr, "nfrouter cleanup: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// cleanupStep removes one backend's objects and says which.
type cleanupStep func() ([]string, error)

// cleanup removes, in the network namespace of the calling thread, what
// co asks for, and prints one "removed …" line per object, or "nothing to
// do". A failing step does not stop the others.
func cleanup(co *cleanupOptions, out io.Writer) error {
	var steps []cleanupStep
	if !co.keepNFRouter {
		steps = append(steps,
			func() ([]string, error) { return nft.Cleanup(0) },
			func() ([]string, error) { return ipvs.Cleanup(co.nodePortMin, co.nodePortMax) },
			bgp.Cleanup,
			func() ([]string, error) { return removeCNIConfig(co.cniConfFile) },
		)
	}
	if co.kubeRouterLeftovers {
		steps = append(steps, func() ([]string, error) { return kuberouter.Cleanup(0) }, bgp.CleanupKubeRouter)
	}
	var errs []error
	n := 0
	for _, step := range steps {
		removed, err := step()
		for _, r := range removed {
			fmt.Fprintln(out, "removed", r)
		}
		n += len(removed)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if n == 0 && len(errs) == 0 {
		fmt.Fprintln(out, "nothing to do")
	}
	if co.kubeRouterLeftovers {
		if legacy := kuberouter.LegacyTables(); len(legacy) > 0 {
			fmt.Fprintln(out, legacyNotice(legacy))
		}
	}
	return errors.Join(errs...)
}

// legacyNotice says what cleanup cannot remove and how to.
func legacyNotice(legacy map[string][]string) string {
	var have []string
	for _, tool := range []string{"iptables", "ip6tables"} {
		if t := legacy[tool]; len(t) > 0 {
			have = append(have, tool+"-legacy: "+strings.Join(t, " "))
		}
	}
	return "not removed: this node has iptables-legacy (x_tables) tables (" + strings.Join(have, "; ") + "), " +
		"which netlink cannot read or change. If kube-router ran with iptables-legacy, its chains " +
		"(KUBE-ROUTER-*, KUBE-NWPLCY-*, KUBE-POD-FW-*) and ipset rules are there: remove them with kube-router's own " +
		"`kube-router --cleanup-config` (its image has the legacy tools), or list them with `iptables-legacy-save` and " +
		"delete each jump (`iptables-legacy -D CHAIN …`), then `iptables-legacy -F NAME` and `iptables-legacy -X NAME` " +
		"for each kube-router chain; then run this again to remove the ipsets those rules held"
}

// removeCNIConfig removes the CNI configuration file nfrouter wrote, when
// there is one.
func removeCNIConfig(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove CNI configuration: %w", err)
	}
	return []string{"CNI configuration " + path}, nil
}
