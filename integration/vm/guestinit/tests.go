package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// runTests runs the test binary with args and returns its exit status; 125
// when it could not be started and 126 when it died from a signal.
func runTests(binary, dir string, args []string) int {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.Env = []string{
		"PATH=/bin:/sbin",
		// Host programs that tests run bring their libraries here (package
		// vm, tools.go); the guest has no ld.so.cache.
		"LD_LIBRARY_PATH=/lib/tools",
		"HOME=/root",
		"TMPDIR=/tmp",
		// Tests may check this to know that they own the whole machine.
		"NFROUTER_VM=1",
	}
	err := cmd.Run()
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if code := exitErr.ExitCode(); code >= 0 {
			return code
		}
		fmt.Fprintf(os.Stderr, "guestinit: tests: %v\n", err)
		return 126
	}
	fmt.Fprintf(os.Stderr, "guestinit: start tests: %v\n", err)
	return 125
}
