package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStat is what /proc says about a process, read from outside.
type ProcStat struct {
	// CPUSeconds is user and system time, including that of the children
	// it has waited for (kube-proxy's nft processes).
	CPUSeconds float64
	// RSS is the resident set now, PeakRSS its high-water mark, in bytes.
	RSS, PeakRSS int64
}

// ReadProcStat reads /proc/<pid>/stat and /proc/<pid>/status.
func ReadProcStat(pid int) (ProcStat, error) {
	var s ProcStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; utime, stime, cutime and
	// cstime are fields 14-17, the 12th to 15th after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 15 {
		return s, fmt.Errorf("pid %d: malformed stat %q", pid, b)
	}
	var ticks float64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("pid %d: stat: %w", pid, err)
		}
		ticks += float64(n)
	}
	s.CPUSeconds = ticks / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("pid %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &s.RSS
		case "VmHWM":
			dst = &s.PeakRSS
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("pid %d: status %s: %w", pid, key, err)
		}
		*dst = kb << 10
	}
	return s, nil
}
