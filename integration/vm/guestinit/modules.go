package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// loadModules loads every module named in the list file in file order (the
// builder puts dependencies first). A line is a path, optionally followed by
// "optional": such a module comes from a soft dependency and may fail to load
// (e.g. a CPU-specific crypto driver) without failing the boot. A module that
// is already loaded is not an error. It returns the number of modules loaded.
func loadModules(listPath string) (int, error) {
	f, err := os.Open(listPath)
	if err != nil {
		return 0, fmt.Errorf("load modules: %w", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		optional := len(fields) > 1 && fields[1] == "optional"
		if err := loadModule(fields[0]); err != nil {
			if optional {
				fmt.Fprintf(os.Stderr, "guestinit: optional %v\n", err)
				continue
			}
			return n, fmt.Errorf("load modules: %w", err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("load modules: read %s: %w", listPath, err)
	}
	return n, nil
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	flags := 0
	if isCompressed(path) {
		flags |= unix.MODULE_INIT_COMPRESSED_FILE
	}
	if err := unix.FinitModule(int(f.Fd()), "", flags); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("module %s: finit_module: %w", path, err)
	}
	return nil
}

func isCompressed(path string) bool {
	for _, ext := range []string{".ko.xz", ".ko.zst", ".ko.gz"} {
		if strings.HasSuffix(path, ext) {
			return true
		}
	}
	return false
}
