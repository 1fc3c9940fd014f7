package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Probe reports whether pod p reaches dst on protocol/port and gets the
// server's answer within timeout. Timeouts and refusals are "no"; only a
// failure to enter the pod's namespace is an error.
func (p *Pod) Probe(protocol string, dst netip.Addr, port int, timeout time.Duration) (bool, error) {
	if p.net == nil {
		return false, fmt.Errorf("pod %s is not running", p.key())
	}
	var ok bool
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
		ok = n > 0
		return nil
	})
	return ok, err
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

// FormatMatrix prints results as a table: one row per source pod, one column
// per destination pod and port; "ok" connected, "--" blocked, "!" marks a
// result that differs from the expected one.
func FormatMatrix(res []ProbeResult) string {
	type col struct {
		to   string
		port string
	}
	var rows []string
	var cols []col
	seenRow, seenCol := map[string]bool{}, map[col]bool{}
	cell := map[string]map[col]string{}
	for _, r := range res {
		c := col{r.To.Name, r.Protocol + "/" + strconv.Itoa(r.Port)}
		if !seenRow[r.From.Name] {
			seenRow[r.From.Name] = true
			rows = append(rows, r.From.Name)
			cell[r.From.Name] = map[col]string{}
		}
		if !seenCol[c] {
			seenCol[c] = true
			cols = append(cols, c)
		}
		s := "--"
		if r.Got {
			s = "ok"
		}
		if r.Got != r.Want {
			s += "!"
		}
		cell[r.From.Name][c] = s
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-14s", "from \\ to")
	for _, c := range cols {
		fmt.Fprintf(&sb, " %-9s", shorten(c.to, 9))
	}
	fmt.Fprintf(&sb, "\n%-14s", "")
	for _, c := range cols {
		fmt.Fprintf(&sb, " %-9s", c.port)
	}
	sb.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-14s", shorten(r, 14))
		for _, c := range cols {
			v := cell[r][c]
			if v == "" {
				v = "."
			}
			fmt.Fprintf(&sb, " %-9s", v)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}
