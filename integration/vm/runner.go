package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultModules are loaded in every guest: what nfrouter programs (IPVS with
// every scheduler it supports, dummy and ipip interfaces, nftables with the
// expressions its rulesets use) and what its tests use (veth; xfrm_user
// because vishvananda/netlink's NewHandleAt opens an xfrm socket by default).
// Dependencies are found through modules.dep and need not be listed.
var DefaultModules = []string{
	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_dh", "ip_vs_sh", "ip_vs_mh",
	"dummy", "ipip", "veth", "xfrm_user",
	"nf_tables", "nft_ct", "nft_nat", "nft_chain_nat", "nft_masq", "nft_redir",
	"nft_numgen", "nft_hash", "nft_limit", "nft_log", "nft_reject_inet",
	"nft_fib_inet", "nft_quota", "nfnetlink_log", "nf_conntrack_netlink",
}

// PackageModulesFile, in a package's testdata directory, names further
// modules that package's tests need: one name per line, "#" starts a comment.
const PackageModulesFile = "vm-modules"

// Runner boots test packages on kernels.
type Runner struct {
	Log *slog.Logger
	// WorkDir holds the initramfs images while they are used.
	WorkDir string
	// GuestInit is the host path of the compiled guestinit.
	GuestInit string
	// Modules are loaded in every guest, before those the package asks for.
	Modules []string
	Timeout time.Duration
	Accel   string
	// Console receives each guest's console output.
	Console io.Writer
}

// Run boots pkg's test binary on kernel k with the given test arguments.
func (r *Runner) Run(ctx context.Context, k *Kernel, pkg *TestPackage, args []string) (Result, error) {
	idx, err := LoadModuleIndex(k.ModulesDir())
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	names, err := packageList(pkg, PackageModulesFile, r.Modules)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	mods, err := idx.Resolve(names)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	toolNames, err := packageList(pkg, PackageToolsFile, nil)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	tools, err := ResolveTools(toolNames)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	f, err := os.CreateTemp(r.WorkDir, "initramfs-*.cpio")
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	f.Close()
	defer os.Remove(f.Name())
	pkgDir, err := filepath.Rel(pkg.ModuleDir, pkg.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	img := Initramfs{
		Init:       r.GuestInit,
		TestBinary: pkg.Binary,
		SourceDir:  pkg.ModuleDir,
		PackageDir: pkgDir,
		ModulesDir: k.ModulesDir(),
		Modules:    mods,
		Files:      tools,
	}
	if err := img.WriteFile(f.Name()); err != nil {
		return Result{}, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	r.Log.Debug("booting", "kernel", k.String(), "package", pkg.ImportPath, "modules", len(mods))
	res, err := Boot{
		Kernel:    k.Image(),
		Initramfs: f.Name(),
		Args:      args,
		Timeout:   r.Timeout,
		Accel:     r.Accel,
		Console:   r.Console,
	}.Run(ctx)
	if err != nil {
		return res, fmt.Errorf("run %s on %s: %w", pkg.ImportPath, k.Spec.Name, err)
	}
	return res, nil
}

// packageList returns base followed by the names listed in the package's
// testdata file of that name, if it has one.
func packageList(pkg *TestPackage, file string, base []string) ([]string, error) {
	names := append([]string(nil), base...)
	if pkg.TestData == "" {
		return names, nil
	}
	err := eachLine(filepath.Join(pkg.TestData, file), func(line string) {
		if name, _, _ := strings.Cut(line, "#"); strings.TrimSpace(name) != "" {
			names = append(names, strings.TrimSpace(name))
		}
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return names, nil
}
