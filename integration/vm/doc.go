// Package vm is the harness of nfrouter's VM test tier: it boots real Debian
// cloud kernels under qemu with a Go test binary and reports the result.
//
// The host kernel of a CI machine usually lacks what nfrouter programs (IPVS,
// dummy and ipip interfaces), and users run many kernel versions, so kernel-tier
// tests also run inside small virtual machines.
//
// # Pieces
//
//   - Kernels (kernel.go, fetch.go): a kernel is named by a Debian metapackage
//     (e.g. linux-image-cloud-amd64 for the 6.1 series). Fetch resolves the
//     metapackage to its current image package with apt-cache, downloads it with
//     apt-get download, unpacks it with dpkg -x (never installs it), runs
//     depmod -b (the .deb ships no modules.dep) and keeps the tree in a cache
//     directory that the caller owns.
//   - Modules (modules.go): the module index resolves module names to files
//     with their dependencies first (modules.dep) and soft dependencies
//     (modules.softdep) around them; soft dependencies are optional.
//   - Initramfs (cpio.go, initramfs.go, tools.go): a newc archive with our
//     guestinit as /init, the statically linked test binary, every testdata
//     directory of the Go module (at the same relative paths, so tests run in
//     their package directory as under "go test"), the modules in load order
//     and any host programs the tests run (with their shared libraries).
//   - Boot (boot.go, console.go): qemu with a timeout; the serial console is
//     streamed to the caller and watched for the end marker that guestinit
//     prints and for kernel panics.
//
// # Why a separate /init
//
// The test binary is not /init itself: PID 1 must never exit (the kernel
// panics), so a small init of ours runs it as a child, reports its exit
// status whatever happened to it, and powers off. Test packages therefore
// opt in without a TestMain or any other change.
//
// # Failure is loud
//
// Boot returns nil only when the guest printed the end marker with status 0.
// A kernel panic (ErrKernelPanic), a timeout (ErrTimeout), a guest that stops
// without the marker (ErrNoEndMarker), a failed module load or other set-up
// error in the guest (ErrGuestSetup) and failing tests (*TestsFailedError) are
// all errors. A module that the kernel does not have fails the initramfs build
// (ErrModuleNotFound).
//
// # Console
//
// The kernel runs with "quiet" (a chatty serial console under software
// emulation triples the boot time) and "oops=panic", so that an oops is a
// panic and cannot pass unnoticed.
package vm
