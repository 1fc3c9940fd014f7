// Package kerneltest helps kernel-tier tests run unchanged on the host kernel
// and in the VM tier's guests (see package vm).
//
// On the host a kernel-tier test skips, with a message that says why, when it
// is not root or when the host kernel lacks a feature (CI hosts often have no
// IPVS, dummy or ipip). In a guest the same absence is a failure: the guest
// kernel was chosen to have the feature, so a skip there would hide a missing
// module.
//
// Each test works in network namespaces of its own, made with NewNetNS and
// entered with Do, so that tests never touch the host's network.
package kerneltest

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// InGuest reports whether the test runs inside a VM tier guest; guestinit
// sets NFROUTER_VM=1 for the test binary.
func InGuest() bool { return os.Getenv("NFROUTER_VM") == "1" }

// RequireRoot skips the test when it cannot manage kernel state.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel-tier test: needs root")
	}
}

// MissingFeature ends a test whose kernel lacks feature (err says how that
// showed): a skip on the host, a failure in a guest.
func MissingFeature(t testing.TB, feature string, err error) {
	t.Helper()
	if InGuest() {
		t.Fatalf("guest kernel lacks %s: %v", feature, err)
	}
	t.Skipf("kernel-tier test: host kernel lacks %s (%v); the VM tier (make test-vm) runs it", feature, err)
}

// NewNetNS makes a new network namespace with lo up and closes it when the
// test ends. The calling goroutine's namespace does not change.
func NewNetNS(t testing.TB) netns.NsHandle {
	t.Helper()
	ns, err := CreateNetNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// CreateNetNS is NewNetNS for a caller that is not a test: the namespace
// lives until the caller closes the handle (and whatever runs or listens
// inside it is gone).
func CreateNetNS() (netns.NsHandle, error) {
	var ns netns.NsHandle
	err := onNewThread(func() error {
		var err error
		// netns.New moves this thread into the new namespace; the thread is
		// discarded afterwards (see onNewThread).
		if ns, err = netns.New(); err != nil {
			return fmt.Errorf("new network namespace: %w", err)
		}
		if err := loopbackUp(); err != nil {
			ns.Close()
			return fmt.Errorf("new network namespace: %w", err)
		}
		return nil
	})
	return ns, err
}

// Do runs fn in namespace ns. Sockets and netlink connections that fn opens
// stay in ns after Do returns.
func Do(ns netns.NsHandle, fn func() error) error {
	return onNewThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter network namespace: %w", err)
		}
		return fn()
	})
}

// onNewThread runs fn on a goroutine locked to its OS thread and never
// unlocks it, so that the runtime ends the thread instead of reusing it in
// whatever namespace fn left it.
func onNewThread(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- fn()
	}()
	return <-done
}
