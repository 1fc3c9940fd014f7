package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nfrouter never starts a process (DESIGN principle 1). forbidExec makes the
// kernel hold it to that: a seccomp filter on every thread of the process
// makes execve and execveat fail with EPERM, so no code path, library or
// kubeconfig credential plugin can start one behind our back.
//
// The filter is installed by the process itself because a container
// runtime cannot do it: runc installs the pod's seccomp profile before it
// execs the container's entrypoint, so a profile that forbids execve keeps
// the container from starting at all (moby/moby#36830). Filters stack, so
// this one adds to the pod's profile (RuntimeDefault in deploy/).
//
// Seccomp needs no privilege once no_new_privs is set, which it also sets
// (the DaemonSet's allowPrivilegeEscalation: false sets it already).

// seccompData offsets (struct seccomp_data in linux/seccomp.h).
const (
	seccompDataNr   = 0
	seccompDataArch = 4
)

// x32Bit marks the x32 ABI's system call numbers on amd64.
const x32Bit = 0x40000000

// auditArch is the AUDIT_ARCH_* value of the architectures nfrouter is built
// for; a filter for another must not be guessed.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// noExecFilter is the BPF program for the architecture nfrouter is built
// for: system calls of a foreign architecture (32-bit compat, x32) and
// execve/execveat fail with EPERM, everything else is allowed.
func noExecFilter() ([]unix.SockFilter, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for architecture %s", runtime.GOARCH)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	deny := unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	allow := unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW}
	// Jumps are relative: pc+1+Jt (or Jf, or K for ja).
	return []unix.SockFilter{
		/* 0 */ {Code: ld, K: seccompDataArch},
		/* 1 */ {Code: jeq, K: arch, Jt: 1}, // native: to 3
		/* 2 */ {Code: unix.BPF_JMP | unix.BPF_JA, K: 4}, // foreign: to 7
		/* 3 */ {Code: ld, K: seccompDataNr},
		/* 4 */ {Code: jge, K: x32Bit, Jt: 2}, // x32: to 7
		/* 5 */ {Code: jeq, K: unix.SYS_EXECVE, Jt: 1}, // to 7
		/* 6 */ {Code: jeq, K: unix.SYS_EXECVEAT, Jf: 1}, // to 7, else to 8
		/* 7 */ deny,
		/* 8 */ allow,
	}, nil
}

// forbidExec installs the filter on every thread of the process.
func forbidExec() error {
	prog, err := noExecFilter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// TSYNC applies the filter to every thread at once, those the Go runtime
	// has already started included; it returns the id of a thread it could
	// not synchronise.
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("install seccomp filter: thread %d cannot take it", r)
	}
	return nil
}
