package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Boot is one run of a test binary in a guest.
type Boot struct {
	// Kernel and Initramfs are host paths.
	Kernel    string
	Initramfs string
	// Args are passed to the test binary (through the kernel command line,
	// after "--"). They must not contain white space or quotes.
	Args []string
	// Timeout bounds the whole boot; zero means 5 minutes.
	Timeout time.Duration
	// Accel is qemu's accelerator: "" or "tcg" for software emulation, or
	// "kvm". Software emulation is the default because it works everywhere:
	// on machines whose /dev/kvm is nested virtualisation, KVM guests were
	// seen to hang in early boot.
	Accel string
	// MemoryMB is the guest's memory; zero means 512.
	MemoryMB int
	// Console receives the guest's console output as it arrives.
	Console io.Writer
	// QEMU is the emulator binary; "" means qemu-system-x86_64.
	QEMU string
}

// Result describes a finished boot.
type Result struct {
	Elapsed time.Duration
}

// Run boots the guest and waits for it to power off. It returns nil only when
// the tests ran and passed; see the package documentation for the errors.
func (b Boot) Run(ctx context.Context) (Result, error) {
	args, err := b.qemuArgs()
	if err != nil {
		return Result{}, err
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	qemu := b.QEMU
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	cmd := exec.CommandContext(ctx, qemu, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The console pipe closes when qemu is killed, which ends the scan below.
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("boot: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("boot: start qemu: %w", err)
	}
	console := b.Console
	if console == nil {
		console = io.Discard
	}
	var w consoleWatcher
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		w.Line(sc.Text())
		fmt.Fprintln(console, cleanLine(sc.Text()))
	}
	waitErr := cmd.Wait()
	res := Result{Elapsed: time.Since(start)}

	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return res, fmt.Errorf("boot: %w after %s", ErrTimeout, timeout)
		}
		return res, fmt.Errorf("boot: %w", ctx.Err())
	}
	if err := w.Err(); err != nil {
		if waitErr != nil {
			return res, fmt.Errorf("boot: %w (qemu: %v: %s)", err, waitErr, strings.TrimSpace(stderr.String()))
		}
		return res, fmt.Errorf("boot: %w", err)
	}
	if waitErr != nil {
		return res, fmt.Errorf("boot: qemu: %w: %s", waitErr, strings.TrimSpace(stderr.String()))
	}
	return res, nil
}

func (b Boot) qemuArgs() ([]string, error) {
	for _, a := range b.Args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'") {
			return nil, fmt.Errorf("boot: test argument %q: empty or contains white space or quotes", a)
		}
	}
	mem := b.MemoryMB
	if mem == 0 {
		mem = 512
	}
	cmdline := "console=ttyS0 panic=-1 oops=panic quiet"
	if len(b.Args) > 0 {
		cmdline += " -- " + strings.Join(b.Args, " ")
	}
	args := []string{
		"-nographic", "-no-reboot", "-nic", "none",
		"-m", fmt.Sprint(mem), "-smp", "1",
		"-kernel", b.Kernel, "-initrd", b.Initramfs,
		"-append", cmdline,
	}
	switch b.Accel {
	case "", "tcg":
		args = append(args, "-accel", "tcg")
	case "kvm":
		args = append(args, "-accel", "kvm")
	default:
		return nil, fmt.Errorf("boot: unknown accelerator %q (want tcg, kvm or empty)", b.Accel)
	}
	return args, nil
}
