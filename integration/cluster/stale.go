package cluster

import (
	"errors"
	"fmt"
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

// NewWorkDir makes a fresh work directory named prefix* in the temporary
// directory, marked with OwnerFile, after removing those of earlier runs
// that died (RemoveStaleDirs). cleanups removes it unless keep.
func NewWorkDir(cleanups *Cleanups, prefix string, keep bool) (string, error) {
	RemoveStaleDirs(filepath.Join(os.TempDir(), prefix+"*"))
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	cleanups.Add("remove "+dir, func() error {
		if keep {
			return nil
		}
		return os.RemoveAll(dir)
	})
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	return dir, nil
}
