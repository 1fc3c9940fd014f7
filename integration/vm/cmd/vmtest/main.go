// Command vmtest runs Go test packages in qemu guests booted with real Debian
// kernels (see package vm) and exits non-zero unless every package passed on
// every kernel.
//
// Usage:
//
//	vmtest -cache DIR [-go GO] [-kernels 6.1,6.12] [-timeout 5m] [-accel tcg|kvm] PACKAGE... [-- TEST FLAGS]
//
// Test flags after "--" go to every test binary, e.g. "-- -test.v -test.run=TestIPVS".
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("vmtest failed", "err", err)
		os.Exit(1)
	}
}

type config struct {
	cacheDir  string
	goTool    string
	kernels   []vm.KernelSpec
	timeout   time.Duration
	accel     string
	packages  []string
	testFlags []string
}

func parseFlags() (*config, error) {
	c := &config{}
	var kernels string
	flag.StringVar(&c.cacheDir, "cache", os.Getenv("NFROUTER_VM_CACHE"), "kernel cache directory (default $NFROUTER_VM_CACHE)")
	flag.StringVar(&c.goTool, "go", "go", "go tool that compiles the test packages")
	flag.StringVar(&kernels, "kernels", "6.1,6.12", "comma-separated kernels: names of vm.DefaultKernels or name=metapackage")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "limit for one boot")
	flag.StringVar(&c.accel, "accel", "tcg", `qemu accelerator: "tcg" (software emulation) or "kvm"`)
	flag.Parse()
	args := flag.Args()
	if i := slices.Index(args, "--"); i >= 0 {
		c.packages, c.testFlags = args[:i], args[i+1:]
	} else {
		c.packages = args
	}
	if c.cacheDir == "" {
		return nil, fmt.Errorf("no cache directory: pass -cache or set NFROUTER_VM_CACHE")
	}
	if len(c.packages) == 0 {
		return nil, fmt.Errorf("no test packages given")
	}
	for _, s := range strings.FieldsFunc(kernels, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, err := vm.ParseKernelSpec(s)
		if err != nil {
			return nil, err
		}
		c.kernels = append(c.kernels, k)
	}
	return c, nil
}

func run(log *slog.Logger) error {
	c, err := parseFlags()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	work, err := os.MkdirTemp("", "nfrouter-vm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	kernels := make([]*vm.Kernel, 0, len(c.kernels))
	for _, spec := range c.kernels {
		k, err := vm.Fetch(ctx, log, c.cacheDir, spec)
		if err != nil {
			return err
		}
		log.Info("kernel ready", "kernel", k.Spec.Name, "package", k.Package, "version", k.Version)
		kernels = append(kernels, k)
	}
	guestInit, err := vm.BuildGuestInit(ctx, c.goTool, work)
	if err != nil {
		return err
	}
	runner := &vm.Runner{
		Log:       log,
		WorkDir:   work,
		GuestInit: guestInit,
		Modules:   vm.DefaultModules,
		Timeout:   c.timeout,
		Accel:     c.accel,
	}
	var failed []string
	for _, p := range c.packages {
		pkg, err := vm.BuildTestPackage(ctx, c.goTool, work, p)
		if err != nil {
			return err
		}
		for _, k := range kernels {
			runner.Console = &prefixWriter{prefix: "[" + k.Spec.Name + "] ", w: os.Stdout}
			res, err := runner.Run(ctx, k, pkg, c.testFlags)
			if err != nil {
				log.Error("FAIL", "package", pkg.ImportPath, "kernel", k.String(), "elapsed", res.Elapsed.Round(time.Millisecond), "err", err)
				failed = append(failed, pkg.ImportPath+" on "+k.Spec.Name)
				continue
			}
			log.Info("ok", "package", pkg.ImportPath, "kernel", k.String(), "elapsed", res.Elapsed.Round(time.Millisecond))
		}
	}
	// A plain closing line, so that whoever reads only the end of the output
	// (a CI summary) sees the count of guest runs.
	runs := len(c.packages) * len(kernels)
	fmt.Printf("vmtest: %d passed, %d failed\n", runs-len(failed), len(failed))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s", len(failed), runs, strings.Join(failed, ", "))
	}
	return nil
}
