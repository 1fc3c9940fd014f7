package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const ownerFile = "owner.pid"

// removeStale deletes work directories of earlier beds whose process is
// gone. Everything else a bed makes dies with its process (Pdeathsig, PID
// namespace, anonymous network namespaces); only files outlive a SIGKILL.
func removeStale(pattern string) {
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not (yet) ours to judge
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
