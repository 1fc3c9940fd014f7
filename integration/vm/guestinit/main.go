// Command guestinit is /init of the VM test tier's initramfs.
//
// The kernel starts it as PID 1 with the arguments that followed "--" on the
// kernel command line. It prepares a minimal system, runs the test binary that
// the initramfs builder placed at a fixed path with those arguments, prints an
// end marker with the result and powers the machine off.
//
// # Steps
//
//  1. Mount proc, sysfs, devtmpfs and a tmpfs on /tmp.
//  2. Load the kernel modules listed, dependencies first, in the module list
//     file (finit_module; compressed modules are handed to the kernel as they
//     are, which needs CONFIG_MODULE_DECOMPRESS).
//  3. Bring the loopback interface up: IPVS refuses real servers with EINVAL
//     while lo is down.
//  4. Run the test binary in its package directory (under /src, where the
//     module's testdata directories are) and wait for it.
//  5. Print the end marker (see package vm, EndMarker) and power off.
//
// Any error before the tests start is reported with the marker's "setup" phase
// so that the host side fails loudly instead of reporting zero tests.
//
// PID 1 must never exit: the kernel would panic. Every path ends in power-off.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Paths inside the initramfs; package vm writes the same ones.
const (
	moduleListPath = "/etc/nfrouter-vm/modules"
	workDirPath    = "/etc/nfrouter-vm/workdir" // holds the package's directory
	testBinaryPath = "/test/pkg.test"
)

func main() {
	start := time.Now()
	status, phase := run(os.Args[1:])
	// The marker format is parsed by package vm (console.go); keep them in step.
	fmt.Printf("\nNFROUTER-VM-END phase=%s status=%d elapsed=%s\n", phase, status, time.Since(start).Round(time.Millisecond))
	powerOff()
}

// run prepares the guest and runs the tests. It returns the exit status and the
// phase it reached ("setup" or "test").
func run(args []string) (int, string) {
	if err := mountFilesystems(); err != nil {
		fmt.Fprintf(os.Stderr, "guestinit: %v\n", err)
		return 125, "setup"
	}
	n, err := loadModules(moduleListPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "guestinit: %v\n", err)
		return 125, "setup"
	}
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "guestinit: %v\n", err)
		return 125, "setup"
	}
	workDir, err := os.ReadFile(workDirPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "guestinit: %v\n", err)
		return 125, "setup"
	}
	fmt.Printf("guestinit: kernel ready, %d modules loaded\n", n)
	return runTests(testBinaryPath, strings.TrimSpace(string(workDir)), args), "test"
}
