package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nfrouter/nfrouter/model"
)

// explainOptions are the flags of `nfrouter explain`.
type explainOptions struct {
	source      sourceOptions
	from, to    string
	port        string
	family      int
	defaultDeny bool
	output      string
	log         toolLog
}

const explainUsage = `Usage: nfrouter explain --from POD|IP --to POD|IP --port PORT[/PROTOCOL] [flags]

Says whether the firewall allows a new connection from --from to --to: the
verdict, each policy isolating the source (egress) or the destination
(ingress) and whether its rules allow the connection, and the path of the
connection's first packet through the firewall chains of each node it
passes. The answer comes from the planner that programs the kernel, run for
each node on the model the agent would see. A POD is namespace/name; an IP
that is no pod's is a node's address or outside the cluster.

`

func parseExplainOptions(args []string) (*explainOptions, error) {
	o := &explainOptions{}
	fs := newCommandFlags("explain")
	fs.StringVar(&o.from, "from", "", "Source: a pod as namespace/name, or an IP address.")
	fs.StringVar(&o.to, "to", "", "Destination: a pod as namespace/name, or an IP address.")
	fs.StringVar(&o.port, "port", "", "Destination port and protocol, as 80/TCP, 53/UDP or 9000/SCTP (TCP when left out).")
	fs.IntVar(&o.family, "family", 0, "Address family of two pods, 4 or 6; IPv4 when both have it.")
	fs.BoolVar(&o.defaultDeny, "netpol-default-deny", false, "Judge as agents running with --netpol-default-deny do.")
	fs.StringVarP(&o.output, "output", "o", "table", "Output format: table or json.")
	o.source.addFlags(fs)
	o.log.addFlags(fs)
	if err := parseCommandFlags(fs, explainUsage, args); err != nil {
		return nil, err
	}
	var errs []string
	if o.from == "" || o.to == "" || o.port == "" {
		errs = append(errs, "--from, --to and --port are required")
	}
	if o.family != 0 && o.family != 4 && o.family != 6 {
		errs = append(errs, fmt.Sprintf("--family must be 4 or 6, not %d", o.family))
	}
	if err := toolFlagsError(errs, o.output, o.log, &o.source); err != nil {
		return nil, err
	}
	return o, nil
}

// parsePort reads PORT[/PROTOCOL].
func parsePort(s string) (model.Protocol, uint16, error) {
	num, proto, _ := strings.Cut(s, "/")
	p := model.TCP
	switch strings.ToUpper(proto) {
	case "", "TCP":
	case "UDP":
		p = model.UDP
	case "SCTP":
		p = model.SCTP
	default:
		return 0, 0, fmt.Errorf("--port %q: protocol must be TCP, UDP or SCTP", s)
	}
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil || n == 0 {
		return 0, 0, fmt.Errorf("--port %q: port must be a number from 1 to 65535", s)
	}
	return p, uint16(n), nil
}

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseExplainOptions(args)
	var q explainQuery
	if err == nil {
		q.proto, q.port, err = parsePort(o.port)
	}
	if code, done := flagsDone("nfrouter explain", err, stdout, stderr); done {
		return code
	}
	q.from, q.to, q.family, q.defaultDeny = o.from, o.to, o.family, o.defaultDeny
	log := o.log.logger(stderr)
	st, err := loadModel(ctx, o.source, log)
	if err == nil {
		var x *explanation
		if x, err = newExplainer(st, o.defaultDeny).explain(q); err == nil {
			err = printExplanation(stdout, x, o.output)
		}
	}
	if err != nil {
		log.Error("nfrouter explain failed", "error", err)
		return exitFailure
	}
	return exitOK
}

func printExplanation(w io.Writer, x *explanation, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(x)
	}
	verdict := "ALLOWED"
	if !x.Allowed {
		verdict = "DENIED"
	}
	fmt.Fprintf(w, "%s -> %s %s/%d: %s\n", x.From.name(), x.To.name(), x.Protocol, x.Port, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range []struct {
		label string
		end   endpoint
	}{{"from", x.From}, {"to", x.To}} {
		where := e.end.Kind
		switch e.end.Kind {
		case kindPod:
			where = "pod on node " + e.end.Node
		case kindNode:
			where = "address of node " + e.end.Node
		case kindOutside:
			where = "outside the cluster"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.label, e.end.IP, where)
	}
	tw.Flush()
	if x.Note != "" {
		fmt.Fprintf(w, "  %s\n", x.Note)
	}

	fmt.Fprintln(w, "\nPolicies:")
	if len(x.Policies) == 0 {
		fmt.Fprintln(w, "  none isolates the source for egress or the destination for ingress")
	} else {
		fmt.Fprintf(tw, "  POLICY\tSELECTS\tALLOWS\n")
		for _, p := range x.Policies {
			allows := "no"
			if p.Allows {
				allows = "yes"
			}
			if p.Error != "" {
				allows += " (fails closed: " + p.Error + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\n", p.Policy, p.Selects, p.Direction, allows)
		}
		tw.Flush()
	}
	for _, n := range x.Nodes {
		result := "accepted"
		if !n.Allowed {
			result = "dropped"
		}
		fmt.Fprintf(w, "\nNode %s, hook %s: %s\n", n.Node, n.Hook, result)
		if n.Note != "" {
			fmt.Fprintf(w, "  %s\n", n.Note)
		}
		for _, c := range []*chainPath{n.Egress, n.Ingress} {
			if c == nil {
				continue
			}
			if len(c.Steps) == 0 {
				fmt.Fprintf(tw, "  %s\t(no rule matched: the chain's policy accepts)\n", c.Chain)
			}
			for _, s := range c.Steps {
				rule := s.Rule
				if s.Policy != "" {
					rule += "\t# policy " + s.Policy
				}
				fmt.Fprintf(tw, "  %s\t%s\n", s.Chain, rule)
			}
		}
		tw.Flush()
	}
	return nil
}
