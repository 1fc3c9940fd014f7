package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Suite is a selection of upstream's cases: ginkgo focus and skip patterns.
type Suite struct {
	Name  string
	Focus string
	// Skip leaves out cases this machine cannot host, each listed with its
	// cause in the results table.
	Skip string
	// Nodes is how many nodes the suite needs at least.
	Nodes int
}

// netpolCI are the NetworkPolicy cases the CI subset runs: every Netpol
// probe connects to the server pod's service ClusterIP (so each one also
// crosses the service proxy); these add named ports and namespace
// selectors.
var netpolCI = []string{
	"should support a 'default-deny-ingress' policy",
	"should allow ingress access on one named port",
	"should allow ingress access from namespace on one named port",
	"should allow egress access on one named port",
	"should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector",
}

// sctpSkip: the host kernel has no SCTP sockets, and the nodes share it.
const sctpSkip = `\[Feature:SCTPConnectivity\]`

// Suites are the runs `make e2e` knows by name.
var Suites = map[string]Suite{
	// netpol is upstream's whole NetworkPolicy suite.
	"netpol": {Name: "netpol", Focus: `\[sig-network\] Netpol`, Skip: sctpSkip, Nodes: 2},
	// services are the Services conformance cases.
	"services": {Name: "services", Focus: `\[sig-network\] Services .*\[Conformance\]`, Skip: sctpSkip, Nodes: 2},
	// ci is the curated subset `.ci/run` can afford.
	"ci": {Name: "ci", Focus: `\[sig-network\] Netpol NetworkPolicy between server and client (` +
		strings.Join(quoteAll(netpolCI), "|") + `) `, Skip: sctpSkip, Nodes: 2},
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = regexp.QuoteMeta(s)
	}
	return out
}

// SuiteNames lists Suites' names, sorted.
func SuiteNames() []string { return slicesSortedKeys(Suites) }

// Patterns compiles the suite's focus and skip.
func (s Suite) Patterns() (focus, skip *regexp.Regexp, err error) {
	focus, err = regexp.Compile(s.Focus)
	if err != nil {
		return nil, nil, fmt.Errorf("suite %s focus: %w", s.Name, err)
	}
	if s.Skip != "" {
		if skip, err = regexp.Compile(s.Skip); err != nil {
			return nil, nil, fmt.Errorf("suite %s skip: %w", s.Name, err)
		}
	}
	return focus, skip, nil
}

// Args are e2e.test's arguments for the suite on a cloudless cluster of
// nodes nodes: the skeleton provider, no log dump over SSH, every node
// ready, no kube-system pods waited for.
func (s Suite) Args(kubeconfig, reportDir string, nodes int) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--provider=skeleton",
		"--allowed-not-ready-nodes=0",
		"--minStartupPods=0",
		"--disable-log-dump",
		fmt.Sprintf("--num-nodes=%d", nodes),
		"--report-dir=" + reportDir,
		"--ginkgo.focus=" + s.Focus,
		"--ginkgo.no-color",
		"--ginkgo.v",
	}
	if s.Skip != "" {
		args = append(args, "--ginkgo.skip="+s.Skip)
	}
	return slices.Clip(args)
}
