package main

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestNoExecFilterProgram runs the filter in x/net/bpf's interpreter over
// seccomp_data records: execve and execveat of the native architecture, any
// call of another architecture and x32 calls are refused with EPERM; other
// calls are allowed.
func TestNoExecFilterProgram(t *testing.T) {
	prog, err := noExecFilter()
	if err != nil {
		t.Skip(err)
	}
	raw := make([]bpf.Instruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatal(err)
	}
	native := auditArch[runtime.GOARCH]
	const deny, allow = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), unix.SECCOMP_RET_ALLOW
	for _, tc := range []struct {
		name     string
		arch, nr uint32
		want     uint32
	}{
		{"execve", native, unix.SYS_EXECVE, deny},
		{"execveat", native, unix.SYS_EXECVEAT, deny},
		{"getpid", native, unix.SYS_GETPID, allow},
		{"socket", native, unix.SYS_SOCKET, allow},
		{"foreign-arch", 0x40000003 /* AUDIT_ARCH_I386 */, 11, deny},
		{"x32", native, x32Bit | 520, deny},
	} {
		// struct seccomp_data: nr, arch, instruction_pointer, args[6]. The
		// kernel's seccomp loads words in host order, x/net/bpf's interpreter
		// in network order: write them big-endian for it.
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompDataNr:], tc.nr)
		binary.BigEndian.PutUint32(data[seccompDataArch:], tc.arch)
		got, err := vm.Run(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if uint32(got) != tc.want {
			t.Errorf("%s: filter returns %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

const envForbidExecChild = "NFROUTER_TEST_FORBID_EXEC_CHILD"

// TestForbidExec installs the filter in a child process (this test binary run
// again, since a filter cannot be removed): afterwards starting a process
// fails with EPERM from every goroutine, and the child otherwise works.
func TestForbidExec(t *testing.T) {
	if _, err := noExecFilter(); err != nil {
		t.Skip(err)
	}
	if os.Getenv(envForbidExecChild) == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestForbidExec$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envForbidExecChild+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestForbidExec") {
			t.Fatalf("child failed: %v", err)
		}
		return
	}

	true_, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to try to start")
	}
	if err := exec.Command(true_).Run(); err != nil {
		t.Fatalf("before the filter, starting %s fails: %v", true_, err)
	}
	if err := forbidExec(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { // on whatever threads the runtime has
			defer wg.Done()
			runtime.LockOSThread()
			errs[i] = exec.Command(true_).Run()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("start %d after the filter: %v, want EPERM", i, err)
		}
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Errorf("reading a file after the filter: %v", err)
	}
	if status, _ := os.ReadFile("/proc/self/status"); !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Error("no_new_privs not set")
	}
}
