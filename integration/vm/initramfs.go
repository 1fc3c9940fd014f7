package vm

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Paths inside the initramfs; guestinit uses the same ones.
const (
	guestModuleList = "etc/nfrouter-vm/modules"
	guestWorkDir    = "etc/nfrouter-vm/workdir"
	guestTestBinary = "test/pkg.test"
	guestSourceDir  = "src"
	guestModulesDir = "lib/modules"
)

// Initramfs describes the archive the guest boots from.
type Initramfs struct {
	// Init is the host path of the guestinit binary (statically linked).
	Init string
	// TestBinary is the host path of the test binary (statically linked).
	TestBinary string
	// SourceDir is the host path of the test package's Go module, or "".
	// Every testdata directory in it is copied to the same place under /src,
	// so that tests find their own testdata and that of other packages
	// ("../model/testdata") where "go test" would.
	SourceDir string
	// PackageDir is the test package's directory relative to SourceDir; the
	// tests run in /src/PackageDir.
	PackageDir string
	// ModulesDir is the kernel's module directory that Modules are relative to.
	ModulesDir string
	// Modules are loaded by the guest in this order.
	Modules []Module
	// Files are further host files, e.g. programs from ResolveTools.
	Files []GuestFile
}

// Encode writes the archive as uncompressed newc cpio.
func (i Initramfs) Encode(w io.Writer) error {
	c := newCPIOWriter(w)
	for _, d := range []string{"dev", "proc", "sys", "tmp", "run", "root"} {
		if err := c.Dir(d); err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
	}
	// The kernel opens /dev/console for PID 1 before devtmpfs is mounted.
	if err := c.CharDev("dev/console", 5, 1); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := c.File("init", 0o755, i.Init); err != nil {
		return fmt.Errorf("initramfs: init: %w", err)
	}
	if err := c.File(guestTestBinary, 0o755, i.TestBinary); err != nil {
		return fmt.Errorf("initramfs: test binary: %w", err)
	}
	workDir := path.Join(guestSourceDir, filepath.ToSlash(i.PackageDir))
	if err := c.Dir(workDir); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := c.Bytes(guestWorkDir, 0o644, []byte("/"+workDir+"\n")); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if i.SourceDir != "" {
		if err := addTestData(c, i.SourceDir, guestSourceDir); err != nil {
			return fmt.Errorf("initramfs: testdata: %w", err)
		}
	}
	if err := i.addModules(c); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	for _, f := range i.Files {
		if err := c.File(f.Dst, f.Mode, f.Src); err != nil {
			return fmt.Errorf("initramfs: %s: %w", f.Dst, err)
		}
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

// addModules copies the module files flat into lib/modules and writes the
// list guestinit loads from: "<path>" or "<path> optional" per line.
func (i Initramfs) addModules(c *cpioWriter) error {
	var list strings.Builder
	for _, m := range i.Modules {
		dst := path.Join(guestModulesDir, filepath.Base(m.Path))
		if err := c.File(dst, 0o644, filepath.Join(i.ModulesDir, m.Path)); err != nil {
			return fmt.Errorf("module %s: %w", m.Name, err)
		}
		list.WriteString("/" + dst)
		if m.Optional {
			list.WriteString(" optional")
		}
		list.WriteString("\n")
	}
	return c.Bytes(guestModuleList, 0o644, []byte(list.String()))
}

// addTestData copies every directory named testdata under src, with what it
// holds, to the same relative place under dst. Like the go tool, it skips
// directories whose names start with "." or "_".
func addTestData(c *cpioWriter, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != src && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if d.Name() != "testdata" {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if err := addTree(c, p, path.Join(dst, filepath.ToSlash(rel))); err != nil {
			return err
		}
		return filepath.SkipDir
	})
}

// addTree copies the directory tree src to dst inside the archive.
func addTree(c *cpioWriter, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			return c.Dir(name)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return c.File(name, uint32(info.Mode().Perm()), p)
		default:
			return nil // symlinks and devices have no place in testdata
		}
	})
}

// WriteFile writes the archive to a file.
func (i Initramfs) WriteFile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := i.Encode(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}
