package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// OwnerFile, in a bed's work directory, holds the pid of the process that
// made it.
const OwnerFile = "owner.pid"

// RemoveStaleDirs deletes work directories matching pattern of earlier beds
// whose process is gone (see OwnerFile). Everything else a bed makes dies
// with its process (Pdeathsig, PID namespace, anonymous network namespaces);
// only files outlive a SIGKILL.
func RemoveStaleDirs(pattern string) {
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, OwnerFile))
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
