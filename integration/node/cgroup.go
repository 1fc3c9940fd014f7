package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupParent is one cgroup of the test's own, made at the root of every
// cgroup hierarchy (each cgroup v1 controller, name=systemd and the unified
// v2 one); nodes make theirs below it, and kubelets are given them as
// cgroupRoot. Nothing that existed before is changed.
type cgroupParent struct {
	name   string   // path below each hierarchy's root
	mounts []string // hierarchy mount points
}

func newCgroupParent(name string) (*cgroupParent, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	g := &cgroupParent{name: name, mounts: mounts}
	if err := g.make(""); err != nil {
		g.remove()
		return nil, err
	}
	return g, nil
}

// cgroupMounts lists the mount points of cgroup and cgroup2 filesystems.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(postFields) < 1 {
			continue
		}
		if postFields[0] == "cgroup" || postFields[0] == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("cgroups: no cgroup filesystem mounted")
	}
	return out, sc.Err()
}

// path is the cgroup path (as kubelet's cgroupRoot and /proc/pid/cgroup
// spell it) of sub below the parent.
func (g *cgroupParent) path(sub string) string { return "/" + filepath.Join(g.name, sub) }

// make creates sub (and its ancestors below the parent) in every hierarchy;
// cpuset cgroups get their parent's CPUs and memory nodes, without which no
// process may join them.
func (g *cgroupParent) make(sub string) error {
	for _, m := range g.mounts {
		dir := m
		for _, part := range strings.Split(filepath.Join(g.name, sub), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					continue // not the cpuset hierarchy
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// procsFiles are sub's cgroup.procs files, one per hierarchy: writing a pid
// to each moves that process into sub everywhere.
func (g *cgroupParent) procsFiles(sub string) []string {
	var out []string
	for _, m := range g.mounts {
		out = append(out, filepath.Join(m, g.name, sub, "cgroup.procs"))
	}
	return out
}

// pids lists every process in sub or below, in any hierarchy.
func (g *cgroupParent) pids(sub string) []int {
	var pids []int
	for _, m := range g.mounts {
		_ = filepath.WalkDir(filepath.Join(m, g.name, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// kill sends SIGKILL to every process in sub or below until none is left
// (containers, shims, containerd: all started for this node).
func (g *cgroupParent) kill(sub string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := g.pids(sub)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still running after %s", g.path(sub), pids, timeout)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond) // polling the kernel's process list, not synchronising
	}
}

// remove removes the parent and every cgroup below it, deepest first, in
// every hierarchy. Cgroups that still hold processes are reported.
func (g *cgroupParent) remove() error {
	var errs []error
	for _, m := range g.mounts {
		root := filepath.Join(m, g.name)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first: a walk lists parents before children.
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupPrefix names each cluster's cgroup parent, followed by its pid.
const cgroupPrefix = "nfrouter-node-"

// removeStaleCgroups removes the cgroups of earlier clusters whose process
// is gone (killed, or a test that timed out: Go then skips every cleanup),
// killing what still runs in them — the containers and shims those
// clusters started; their kubelets and containerds died with them
// (Pdeathsig).
func removeStaleCgroups() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for _, m := range mounts {
		dirs, _ := filepath.Glob(filepath.Join(m, cgroupPrefix+"*"))
		for _, d := range dirs {
			name := filepath.Base(d)
			pid, err := strconv.Atoi(strings.TrimPrefix(name, cgroupPrefix))
			if err != nil || seen[name] || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				continue
			}
			seen[name] = true
			g := &cgroupParent{name: name, mounts: mounts}
			if err := g.kill("", 30*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, g.remove())
		}
	}
	return errors.Join(errs...)
}
