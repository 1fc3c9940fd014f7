package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Probe reports whether pod p reaches dst on protocol/port and gets the
// server's answer within timeout. Timeouts and refusals are "no"; only a
// failure to enter the pod's namespace is an error.
func (p *Pod) Probe(protocol string, dst netip.Addr, port int, timeout time.Duration) (bool, error) {
	answer, err := p.Ask(protocol, dst, port, timeout)
	return answer != "", err
}

// Ask connects from pod p to dst on protocol/port and returns what the server
// answered: the name of the pod serving it, or "" when nothing answered
// within timeout.
func (p *Pod) Ask(protocol string, dst netip.Addr, port int, timeout time.Duration) (string, error) {
	if p.net == nil {
		return "", fmt.Errorf("pod %s is not running", p.key())
	}
	var answer string
	err := kerneltest.Do(p.net.ns, func() error {
		target := netip.AddrPortFrom(dst, uint16(port)).String()
		c, err := net.DialTimeout(protocol, target, timeout)
		if err != nil {
			return nil
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		if protocol == "udp" {
			if _, err := c.Write([]byte("?")); err != nil {
				return nil
			}
		}
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		answer = string(buf[:n])
		return nil
	})
	return answer, err
}

// ProbeCase is one expected connection of a probe matrix.
type ProbeCase struct {
	From     *Pod
	To       *Pod
	Protocol string // tcp, udp
	Port     int
	Want     bool
}

func (c ProbeCase) String() string {
	return fmt.Sprintf("%s -> %s:%s/%d", c.From.Name, c.To.Name, c.Protocol, c.Port)
}

// ProbeResult is a probe case with its outcome.
type ProbeResult struct {
	ProbeCase
	Got bool
}

// RunProbes runs the cases in parallel and returns every outcome.
func RunProbes(ctx context.Context, cases []ProbeCase, timeout time.Duration) ([]ProbeResult, error) {
	res := make([]ProbeResult, len(cases))
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res[i].ProbeCase = c
			res[i].Got, errs[i] = c.From.Probe(c.Protocol, c.To.IP, c.Port, timeout)
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// Mismatches lists the results that differ from what was wanted.
func Mismatches(res []ProbeResult) []string {
	var out []string
	for _, r := range res {
		if r.Got != r.Want {
			out = append(out, fmt.Sprintf("%s: connected=%v, want %v", r.ProbeCase, r.Got, r.Want))
		}
	}
	return out
}

// FormatMatrix prints results as a table: one row per destination pod and
// port, one column per source pod; "ok" connected, "--" blocked, "!" marks a
// result that differs from the expected one.
func FormatMatrix(res []ProbeResult) string {
	var rows, cols []string
	seenRow, seenCol := map[string]bool{}, map[string]bool{}
	cell := map[string]map[string]string{}
	for _, r := range res {
		row := fmt.Sprintf("%s %s:%s/%d", r.To.Name, r.To.IP, r.Protocol, r.Port)
		if !seenRow[row] {
			seenRow[row] = true
			rows = append(rows, row)
			cell[row] = map[string]string{}
		}
		if !seenCol[r.From.Name] {
			seenCol[r.From.Name] = true
			cols = append(cols, r.From.Name)
		}
		s := "--"
		if r.Got {
			s = "ok"
		}
		if r.Got != r.Want {
			s += "!"
		}
		cell[row][r.From.Name] = s
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-32s", "to \\ from")
	for _, c := range cols {
		fmt.Fprintf(&sb, " %-12s", c)
	}
	sb.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-32s", r)
		for _, c := range cols {
			v := cell[r][c]
			if v == "" {
				v = "."
			}
			fmt.Fprintf(&sb, " %-12s", v)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
