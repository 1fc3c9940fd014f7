package e2e

import (
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nfrouter/nfrouter/integration/image"
)

// imageLibDir is where every shared library goes in the image: a directory
// the Debian loader searches by default, so no ld.so.cache is needed.
const imageLibDir = "/lib/x86_64-linux-gnu"

// libraryDirs are searched, relative to the unpacked root, for DT_NEEDED
// libraries, in the order of Debian's loader.
var libraryDirs = []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64", "lib", "usr/lib"}

// closure collects programs with their loader and libraries, transitively,
// from an unpacked root (never the host's own files). Symbolic links inside
// the root are resolved inside it; the image gets regular files.
type closure struct {
	root  string
	seen  map[string]bool // image paths already added
	files []image.File
}

func newClosure(root string) *closure { return &closure{root: root, seen: map[string]bool{}} }

func (c *closure) addProgram(dst, src string) error {
	return c.add(dst, src)
}

func (c *closure) add(dst, src string) error {
	if c.seen[dst] {
		return nil
	}
	c.seen[dst] = true
	real, err := c.resolve(src)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return err
	}
	c.files = append(c.files, image.File{Path: dst, Mode: 0o755, Data: data})
	return c.addDependencies(real)
}

func (c *closure) addDependencies(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.rel(bin), err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return fmt.Errorf("read interpreter of %s: %w", c.rel(bin), err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		if err := c.add(interp, filepath.Join(c.root, interp)); err != nil {
			return fmt.Errorf("interpreter of %s: %w", c.rel(bin), err)
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read libraries of %s: %w", c.rel(bin), err)
	}
	for _, lib := range needed {
		dst := path.Join(imageLibDir, lib)
		if c.seen[dst] {
			continue
		}
		src, err := c.findLibrary(lib)
		if err != nil {
			return fmt.Errorf("library of %s: %w", c.rel(bin), err)
		}
		if err := c.add(dst, src); err != nil {
			return err
		}
	}
	return nil
}

func (c *closure) findLibrary(name string) (string, error) {
	for _, d := range libraryDirs {
		p := filepath.Join(c.root, d, name)
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s not in %s of the unpacked packages", name, strings.Join(libraryDirs, ", "))
}

// resolve follows symbolic links with absolute targets taken as relative
// to the root, as they would be inside the image.
func (c *closure) resolve(p string) (string, error) {
	for range 16 {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			p = filepath.Join(c.root, target)
		} else {
			p = filepath.Join(filepath.Dir(p), target)
		}
		if !strings.HasPrefix(p, c.root+string(filepath.Separator)) {
			return "", fmt.Errorf("link %s leaves the unpacked root", c.rel(p))
		}
	}
	return "", fmt.Errorf("too many links at %s", c.rel(p))
}

func (c *closure) rel(p string) string {
	if r, err := filepath.Rel(c.root, p); err == nil {
		return r
	}
	return p
}

func slicesSortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
