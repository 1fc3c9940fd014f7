package vm

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// PackageToolsFile, in a package's testdata directory, names host programs
// that the package's tests run (e.g. "nft" to read a ruleset back): one name
// per line, "#" starts a comment. They are copied into the guest's /bin with
// the shared libraries they need.
const PackageToolsFile = "vm-tools"

// Guest paths for host programs: libraries go into one directory that
// guestinit puts on LD_LIBRARY_PATH, so that no ld.so.cache is needed.
const (
	guestToolsBin = "bin"
	guestToolsLib = "lib/tools"
)

// libraryDirs are searched for DT_NEEDED libraries, after a binary's
// RUNPATH, in the order of Debian's dynamic loader.
var libraryDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// GuestFile is a host file copied into the initramfs.
type GuestFile struct {
	// Src is the host path, Dst the path in the guest without a leading "/".
	Src, Dst string
	Mode     uint32
}

// ResolveTools finds the named programs in PATH and returns them with their
// dynamic loader and every shared library they need, transitively.
func ResolveTools(names []string) ([]GuestFile, error) {
	r := toolResolver{seen: map[string]bool{}}
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("host tool %s: %w", name, err)
		}
		r.files = append(r.files, GuestFile{Src: p, Dst: path.Join(guestToolsBin, name), Mode: 0o755})
		if err := r.addDependencies(p); err != nil {
			return nil, fmt.Errorf("host tool %s: %w", name, err)
		}
	}
	return r.files, nil
}

type toolResolver struct {
	seen  map[string]bool // guest paths already added
	files []GuestFile
}

func (r *toolResolver) addDependencies(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return fmt.Errorf("read interpreter of %s: %w", bin, err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		r.add(GuestFile{Src: interp, Dst: strings.TrimPrefix(interp, "/"), Mode: 0o755})
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read libraries of %s: %w", bin, err)
	}
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	for _, lib := range needed {
		dst := path.Join(guestToolsLib, lib)
		if r.seen[dst] {
			continue
		}
		src, err := findLibrary(lib, runpath)
		if err != nil {
			return fmt.Errorf("library of %s: %w", bin, err)
		}
		r.add(GuestFile{Src: src, Dst: dst, Mode: 0o755})
		if err := r.addDependencies(src); err != nil {
			return err
		}
	}
	return nil
}

func (r *toolResolver) add(f GuestFile) {
	if !r.seen[f.Dst] {
		r.seen[f.Dst] = true
		r.files = append(r.files, f)
	}
}

func findLibrary(name string, runpath []string) (string, error) {
	var dirs []string
	for _, rp := range runpath {
		dirs = append(dirs, filepath.SplitList(rp)...)
	}
	for _, d := range append(dirs, libraryDirs...) {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s not found in %s", name, strings.Join(append(dirs, libraryDirs...), ", "))
}
