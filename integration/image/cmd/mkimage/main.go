// Command mkimage is `make image`: it packs already cross-compiled static
// binaries into one multi-platform OCI image (an empty base plus one layer,
// the binary as a non-shell entrypoint) and writes a tarball that
// `ctr image import` and `docker load` accept. It builds nothing itself.
//
//	go run ./integration/image/cmd/mkimage -name nfrouter:dev -o bin/nfrouter-image.tar \
//	  -binary linux/amd64=bin/linux-amd64/nfrouter -binary linux/arm64=bin/linux-arm64/nfrouter
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/nfrouter/nfrouter/integration/image"
)

// binaries collects repeated -binary os/arch=path flags.
type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var bins binaries
	flag.Var(&bins, "binary", "os/arch=path of a static binary; repeat once per platform")
	var (
		ref        = flag.String("name", "nfrouter:dev", "image reference the archive names")
		out        = flag.String("o", "nfrouter-image.tar", "output tarball")
		path       = flag.String("path", "/nfrouter", "the binary's path in the image, also its entrypoint")
		dockerArch = flag.String("docker-platform", "linux/"+runtime.GOARCH, "platform that manifest.json (for Docker engines before 25) lists")
	)
	flag.Parse()
	if err := run(bins, *ref, *out, *path, *dockerArch); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(bins []string, ref, out, path, dockerPlatform string) error {
	if len(bins) == 0 {
		return fmt.Errorf("no -binary given")
	}
	specs := make([]image.Spec, 0, len(bins))
	for _, b := range bins {
		platform, file, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("-binary %q: want os/arch=path", b)
		}
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return fmt.Errorf("-binary %q: %w", b, err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		specs = append(specs, image.Spec{Platform: *p, Entrypoint: []string{path},
			Files: []image.File{{Path: path, Mode: 0o755, Data: data}}})
	}
	dp, err := v1.ParsePlatform(dockerPlatform)
	if err != nil {
		return fmt.Errorf("-docker-platform: %w", err)
	}
	idx, err := image.Index(specs...)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".mkimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	if err := image.WriteArchive(w, ref, idx, *dp); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s (index %s, %d platforms)\n", out, ref, digest, len(specs))
	return nil
}
