package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one regular file of a layer.
type File struct {
	// Path inside the image, absolute ("/nfrouter").
	Path string
	Mode int64
	Data []byte
}

// Spec describes one platform's image.
type Spec struct {
	Platform   v1.Platform
	Files      []File
	Entrypoint []string
	// Cmd is the entrypoint's default arguments (agnhost's "pause").
	Cmd []string
	Env []string
	// Created is the config's creation time and every file's modification
	// time; the zero value means the Unix epoch, for reproducible digests.
	Created time.Time
}

// Image builds one OCI image: an empty base plus one layer holding spec's
// files.
func Image(spec Spec) (v1.Image, error) {
	created := spec.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	layerTar, err := layerTar(spec.Files, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "nfrouter integration/image"}})
	if err != nil {
		return nil, fmt.Errorf("image append layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS = spec.Platform.OS
	cfg.Architecture = spec.Platform.Architecture
	cfg.Variant = spec.Platform.Variant
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Cmd = spec.Cmd
	cfg.Config.Env = spec.Env
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// Index builds the image of every spec and gathers them in one OCI index,
// each manifest labelled with its platform.
func Index(specs ...Spec) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, 0, len(specs))
	for _, spec := range specs {
		img, err := Image(spec)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", spec.Platform, err)
		}
		platform := spec.Platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &platform}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}

// layerTar is the uncompressed layer: the files' parent directories, then
// the files, all owned by root with the same modification time.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{".": true, "/": true}
	var addDir func(dir string) error
	addDir = func(dir string) error {
		if dirs[dir] {
			return nil
		}
		if err := addDir(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755,
			ModTime: mtime})
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("image file %q: path must be absolute and clean", f.Path)
		}
		if err := addDir(path.Dir(f.Path)); err != nil {
			return nil, fmt.Errorf("image file %s: %w", f.Path, err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: f.Mode, Size: int64(len(f.Data)),
			ModTime: mtime}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("image file %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("image file %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return buf.Bytes(), nil
}
