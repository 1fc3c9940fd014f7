package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nfrouter/nfrouter/integration/image"
)

// Images the tier builds itself: no registry is reachable here.
const (
	// TestServerRef answers HTTP on port 8080 with its pod's name.
	TestServerRef = "nfrouter.test/testserver:1"
)

// BuildImage compiles the main package pkg (static, for this machine's
// platform) and writes an image archive named ref to dir/<name>.tar, with
// the binary as /<name> and its entrypoint. It returns the archive's path.
func BuildImage(ctx context.Context, dir, name, ref, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, goCommand(), "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	idx, err := image.Index(image.Spec{Platform: platform, Entrypoint: []string{"/" + name},
		Files: []image.File{{Path: "/" + name, Mode: 0o755, Data: data}}})
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	archive := filepath.Join(dir, name+".tar")
	f, err := os.Create(archive)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	defer f.Close()
	if err := image.WriteArchive(f, ref, idx, platform); err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return archive, f.Close()
}

// goCommand is $GO (the Makefile's) or go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
