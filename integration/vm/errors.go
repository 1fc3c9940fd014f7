package vm

import (
	"errors"
	"fmt"
)

// Errors of a boot that did not end with passing tests.
var (
	// ErrKernelPanic: the guest kernel panicked (an oops panics too).
	ErrKernelPanic = errors.New("guest kernel panicked")
	// ErrTimeout: the guest did not finish within the boot's timeout.
	ErrTimeout = errors.New("guest timed out")
	// ErrNoEndMarker: qemu exited without the end marker, e.g. the guest
	// rebooted or /init died.
	ErrNoEndMarker = errors.New("guest stopped without the end marker")
	// ErrGuestSetup: guestinit failed before running the tests, e.g. a module
	// did not load.
	ErrGuestSetup = errors.New("guest set-up failed")
)

// TestsFailedError reports that the test binary ran and exited non-zero.
type TestsFailedError struct {
	Status int
}

func (e *TestsFailedError) Error() string {
	return fmt.Sprintf("tests failed in the guest (exit status %d)", e.Status)
}
