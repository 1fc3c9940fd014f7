package vm

import (
	"fmt"
	"path/filepath"
	"strings"
)

// KernelSpec names a kernel of the test matrix by the Debian metapackage that
// depends on its current image package.
type KernelSpec struct {
	// Name is the short name used on the command line and in logs, e.g. "6.1".
	Name string
	// Metapackage is the Debian package whose dependency is the image package.
	Metapackage string
}

// DefaultKernels is the test matrix: the Debian 12 cloud kernel (6.1) and the
// 6.12 cloud kernel that Debian 12 also carries. Adding a kernel is one line
// here, or "name=metapackage" on the command line.
var DefaultKernels = []KernelSpec{
	{Name: "6.1", Metapackage: "linux-image-cloud-amd64"},
	{Name: "6.12", Metapackage: "linux-image-6.12-cloud-amd64"},
}

// ParseKernelSpec accepts a name from DefaultKernels ("6.12") or an explicit
// "name=metapackage".
func ParseKernelSpec(s string) (KernelSpec, error) {
	if name, meta, ok := strings.Cut(s, "="); ok {
		if name == "" || meta == "" {
			return KernelSpec{}, fmt.Errorf("kernel %q: want name=metapackage", s)
		}
		return KernelSpec{Name: name, Metapackage: meta}, nil
	}
	for _, k := range DefaultKernels {
		if k.Name == s {
			return k, nil
		}
	}
	return KernelSpec{}, fmt.Errorf("kernel %q: unknown name (known: %s), or give name=metapackage", s, knownKernelNames())
}

func knownKernelNames() string {
	names := make([]string, len(DefaultKernels))
	for i, k := range DefaultKernels {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// Kernel is an unpacked kernel in the cache.
type Kernel struct {
	Spec KernelSpec
	// Package and Version identify the image package, e.g.
	// linux-image-6.1.0-57-cloud-amd64 6.1.192-3.
	Package string
	Version string
	// Release is the kernel release (uname -r) and the name of its module
	// directory, e.g. 6.1.0-57-cloud-amd64.
	Release string
	// Root is the directory the package was unpacked into.
	Root string
}

// Image is the path of the bootable kernel image.
func (k *Kernel) Image() string {
	return filepath.Join(k.Root, "boot", "vmlinuz-"+k.Release)
}

// ModulesDir is the kernel's module directory (with modules.dep).
func (k *Kernel) ModulesDir() string {
	return filepath.Join(k.Root, "lib", "modules", k.Release)
}

func (k *Kernel) String() string {
	return fmt.Sprintf("%s (%s %s)", k.Spec.Name, k.Package, k.Version)
}
