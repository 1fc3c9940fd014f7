package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Fetch returns the current kernel of spec, unpacked under cacheDir, fetching
// and unpacking it first when the cache does not hold that version yet.
//
// When that fails, the package lists may be stale or missing: Fetch updates
// them and tries once more. When apt still cannot deliver (no network), the
// kernel last fetched for spec is used, with a warning.
func Fetch(ctx context.Context, log *slog.Logger, cacheDir string, spec KernelSpec) (*Kernel, error) {
	kernelsDir := filepath.Join(cacheDir, "kernels")
	if err := os.MkdirAll(kernelsDir, 0o755); err != nil {
		return nil, fmt.Errorf("fetch kernel %s: %w", spec.Name, err)
	}
	k, err := fetch(ctx, log, kernelsDir, spec)
	if err == nil {
		return k, nil
	}
	log.Info("fetch failed, updating package lists", "kernel", spec.Name, "err", err)
	if _, uerr := command(ctx, "", nil, "apt-get", "-q", "update"); uerr != nil {
		err = fmt.Errorf("%w (apt-get update: %w)", err, uerr)
	} else if k, err = fetch(ctx, log, kernelsDir, spec); err == nil {
		return k, nil
	}
	k, cerr := lastFetched(kernelsDir, spec)
	if cerr != nil {
		return nil, fmt.Errorf("fetch kernel %s: %w (and no cached kernel: %w)", spec.Name, err, cerr)
	}
	log.Warn("cannot fetch the current kernel, using the cached one", "kernel", spec.Name, "package", k.Package, "version", k.Version, "err", err)
	return k, nil
}

// fetch resolves spec with apt and makes sure its kernel is in kernelsDir.
func fetch(ctx context.Context, log *slog.Logger, kernelsDir string, spec KernelSpec) (*Kernel, error) {
	pkg, version, err := resolveMetapackage(ctx, spec.Metapackage)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(kernelsDir, pkg+"_"+version)
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		log.Info("fetching kernel", "kernel", spec.Name, "package", pkg, "version", version)
		if err := download(ctx, kernelsDir, pkg, version, root); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	k, err := openKernel(spec, root)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(currentFile(kernelsDir, spec), []byte(filepath.Base(root)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return k, nil
}

// resolveMetapackage returns the image package and version that the candidate
// version of the metapackage depends on.
func resolveMetapackage(ctx context.Context, meta string) (pkg, version string, err error) {
	out, err := command(ctx, "", nil, "apt-cache", "show", "--no-all-versions", meta)
	if err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", meta, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		deps, ok := strings.CutPrefix(sc.Text(), "Depends:")
		if !ok {
			continue
		}
		for _, dep := range strings.Split(deps, ",") {
			// e.g. "linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3)"
			name, rest, _ := strings.Cut(strings.TrimSpace(dep), " ")
			ver, ok := strings.CutPrefix(strings.Trim(rest, "()"), "= ")
			if strings.HasPrefix(name, "linux-image-") && ok {
				return name, ver, nil
			}
		}
	}
	return "", "", fmt.Errorf("resolve %s: no linux-image dependency with an exact version", meta)
}

// download fetches pkg=version, unpacks it and builds its module index, all in
// a temporary directory that is renamed to root only when complete.
func download(ctx context.Context, kernelsDir, pkg, version, root string) error {
	tmp, err := os.MkdirTemp(kernelsDir, ".fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The sandbox user cannot write to a root-owned temporary directory.
	get := []string{"-q", "-o", "APT::Sandbox::User=root", "download", pkg + "=" + version}
	if _, err := command(ctx, tmp, nil, "apt-get", get...); err != nil {
		return fmt.Errorf("download %s: %w", pkg, err)
	}
	debs, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(debs) != 1 {
		return fmt.Errorf("download %s: want one .deb, found %d", pkg, len(debs))
	}
	unpacked := filepath.Join(tmp, "root")
	if _, err := command(ctx, "", nil, "dpkg", "-x", debs[0], unpacked); err != nil {
		return fmt.Errorf("unpack %s: %w", pkg, err)
	}
	release, err := moduleRelease(unpacked)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", pkg, err)
	}
	if _, err := command(ctx, "", nil, "depmod", "-b", unpacked, release); err != nil {
		return fmt.Errorf("index modules of %s: %w", pkg, err)
	}
	if err := os.Rename(unpacked, root); err != nil {
		return fmt.Errorf("store %s: %w", pkg, err)
	}
	return nil
}

// moduleRelease returns the single kernel release under root/lib/modules.
func moduleRelease(root string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "lib", "modules"))
	if err != nil {
		return "", err
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		return "", fmt.Errorf("want one kernel release in lib/modules, found %d entries", len(entries))
	}
	return entries[0].Name(), nil
}

// openKernel describes a kernel already unpacked at root, named
// "<package>_<version>".
func openKernel(spec KernelSpec, root string) (*Kernel, error) {
	pkg, version, ok := strings.Cut(filepath.Base(root), "_")
	if !ok {
		return nil, fmt.Errorf("cached kernel %s: unexpected directory name", root)
	}
	release, err := moduleRelease(root)
	if err != nil {
		return nil, fmt.Errorf("cached kernel %s: %w", root, err)
	}
	k := &Kernel{Spec: spec, Package: pkg, Version: version, Release: release, Root: root}
	for _, p := range []string{k.Image(), filepath.Join(k.ModulesDir(), "modules.dep")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("cached kernel %s: %w", root, err)
		}
	}
	return k, nil
}

func currentFile(kernelsDir string, spec KernelSpec) string {
	return filepath.Join(kernelsDir, spec.Name+".current")
}

// lastFetched returns the kernel that Fetch last returned for spec.
func lastFetched(kernelsDir string, spec KernelSpec) (*Kernel, error) {
	b, err := os.ReadFile(currentFile(kernelsDir, spec))
	if err != nil {
		return nil, err
	}
	return openKernel(spec, filepath.Join(kernelsDir, strings.TrimSpace(string(b))))
}
