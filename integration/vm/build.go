package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// GuestInitPackage is the import path of the guest's /init.
const GuestInitPackage = "github.com/nfrouter/nfrouter/integration/vm/guestinit"

// staticEnv makes the go tool build binaries that run without a C library,
// as the initramfs has none.
var staticEnv = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}

// BuildGuestInit compiles guestinit into dir and returns the binary's path.
func BuildGuestInit(ctx context.Context, goTool, dir string) (string, error) {
	out := filepath.Join(dir, "init")
	if _, err := command(ctx, "", staticEnv, goTool, "build", "-o", out, GuestInitPackage); err != nil {
		return "", fmt.Errorf("build guest init: %w", err)
	}
	return out, nil
}

// TestPackage is a Go package compiled for the guest.
type TestPackage struct {
	ImportPath string
	// Binary is the statically linked test binary.
	Binary string
	// ModuleDir is the root of the package's Go module, Dir its directory.
	ModuleDir, Dir string
	// TestData is the package's testdata directory, or "" if it has none.
	TestData string
}

// BuildTestPackage compiles the tests of pkg (an import path or a ./relative
// pattern naming one package) statically into dir.
func BuildTestPackage(ctx context.Context, goTool, dir, pkg string) (*TestPackage, error) {
	out, err := command(ctx, "", nil, goTool, "list", "-json=ImportPath,Dir,Module,TestGoFiles,XTestGoFiles", pkg)
	if err != nil {
		return nil, fmt.Errorf("build tests of %s: %w", pkg, err)
	}
	var info struct {
		ImportPath   string
		Dir          string
		Module       *struct{ Dir string }
		TestGoFiles  []string
		XTestGoFiles []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("build tests of %s: go list: %w", pkg, err)
	}
	if info.Module == nil {
		return nil, fmt.Errorf("build tests of %s: not in a Go module", pkg)
	}
	if len(info.TestGoFiles)+len(info.XTestGoFiles) == 0 {
		return nil, fmt.Errorf("build tests of %s: package has no test files", pkg)
	}
	tp := &TestPackage{
		ImportPath: info.ImportPath,
		Binary:     filepath.Join(dir, filepath.Base(info.ImportPath)+".test"),
		ModuleDir:  info.Module.Dir,
		Dir:        info.Dir,
	}
	if _, err := command(ctx, "", staticEnv, goTool, "test", "-c", "-o", tp.Binary, info.ImportPath); err != nil {
		return nil, fmt.Errorf("build tests of %s: %w", pkg, err)
	}
	if st, err := os.Stat(filepath.Join(info.Dir, "testdata")); err == nil && st.IsDir() {
		tp.TestData = filepath.Join(info.Dir, "testdata")
	}
	return tp, nil
}
