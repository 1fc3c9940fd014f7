package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// command is one of nfrouter's commands besides the agent: it parses its own
// args and returns the exit status.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are chosen by the first argument when it is not a flag
// ("nfrouter cleanup --kube-router-leftovers"); without one nfrouter runs
// the agent. Add a command here.
var commands = map[string]command{
	"cleanup": {summary: "remove what nfrouter (and, asked, kube-router) programmed on this node", run: runCleanup},
	"explain": {summary: "whether the firewall allows a connection, which policies decide, its path through each node's chains", run: runExplain},
	"denials": {summary: "print the packets the firewall drops, with pod names and the policies isolating them", run: runDenials},
}

// commandUsage lists the commands for --help.
func commandUsage() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("Commands (nfrouter COMMAND --help for its flags):\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	return b.String()
}
