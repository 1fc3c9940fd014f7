package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRemoveStaleCgroups: a run killed before Close leaves containers in its
// cgroups; the next run kills them and removes the cgroups, and leaves a
// live run's alone.
func TestRemoveStaleCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (cgroups)")
	}
	// A pid that is gone: a process that has exited and been reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale, err := newCgroupParent(cgroupPrefix + strconv.Itoa(gone.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	live, err := newCgroupParent(cgroupPrefix + strconv.Itoa(os.Getpid()))
	if err != nil {
		stale.remove()
		t.Fatal(err)
	}
	t.Cleanup(func() { stale.kill("", 5*time.Second); stale.remove(); live.remove() })
	if err := stale.make("node-1/kubepods/pod1"); err != nil {
		t.Fatal(err)
	}
	// A leftover "container": sleep moved into the stale cgroups.
	sleep := exec.Command("sh", "-c", `for f in $1; do echo $$ > "$f"; done; exec sleep 600`, "sh",
		strings.Join(stale.procsFiles("node-1/kubepods/pod1"), " "))
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleep.Wait() }()
	err = poll(t.Context(), 10*time.Second, 10*time.Millisecond, func() (bool, error) {
		return len(stale.pids("")) == 1, nil
	})
	if err != nil {
		t.Fatalf("sleep never joined the stale cgroup: %v", err)
	}

	if err := removeStaleCgroups(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if ws, ok := sleep.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("leftover process ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("leftover process still running")
	}
	for _, m := range stale.mounts {
		if _, err := os.Stat(filepath.Join(m, stale.name)); !os.IsNotExist(err) {
			t.Errorf("%s: stale cgroup still there (%v)", m, err)
		}
		if _, err := os.Stat(filepath.Join(m, live.name)); err != nil {
			t.Errorf("%s: live run's cgroup removed: %v", m, err)
		}
	}
}
