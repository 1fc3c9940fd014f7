package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations on index.json's descriptor that name the image for containerd.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// dockerManifest is one entry of the docker save format's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes idx as an OCI image layout tarball named ref (e.g.
// "nfrouter:dev"). dockerPlatform selects the image that manifest.json (the
// docker save format, for Docker engines before 25) lists; the OCI index
// holds every platform.
func WriteArchive(w io.Writer, ref string, idx v1.ImageIndex, dockerPlatform v1.Platform) error {
	full, tag, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	aw := &archiveWriter{tw: tar.NewWriter(w), written: map[v1.Hash]bool{}}
	if err := aw.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := aw.file("blobs/", nil); err != nil {
		return err
	}
	if err := aw.file("blobs/sha256/", nil); err != nil {
		return err
	}

	rawIndex, err := idx.RawManifest()
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	indexDigest, indexSize, err := v1.SHA256(bytes.NewReader(rawIndex))
	if err != nil {
		return fmt.Errorf("archive: index digest: %w", err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	var docker []dockerManifest
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return fmt.Errorf("archive: image %s: %w", desc.Digest, err)
		}
		entry, err := aw.image(img)
		if err != nil {
			return fmt.Errorf("archive: image %s: %w", desc.Platform, err)
		}
		if desc.Platform != nil && desc.Platform.Equals(dockerPlatform) {
			entry.RepoTags = []string{dockerTag(full)}
			docker = append(docker, entry)
		}
	}
	if len(docker) == 0 {
		return fmt.Errorf("archive: no image for %s in the index (manifest.json needs one)", dockerPlatform.String())
	}
	if err := aw.blob(indexDigest, rawIndex); err != nil {
		return err
	}

	top := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIImageIndex, Digest: indexDigest, Size: indexSize,
		Annotations: map[string]string{annotationContainerdName: full, annotationRefName: tag},
	}}}
	rawTop, err := json.Marshal(top)
	if err != nil {
		return fmt.Errorf("archive: index.json: %w", err)
	}
	if err := aw.file("index.json", rawTop); err != nil {
		return err
	}
	rawDocker, err := json.Marshal(docker)
	if err != nil {
		return fmt.Errorf("archive: manifest.json: %w", err)
	}
	if err := aw.file("manifest.json", rawDocker); err != nil {
		return err
	}
	if err := aw.tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// NormalizeRef returns ref in the fully qualified form containerd and the
// kubelet use ("nfrouter:dev" → "docker.io/library/nfrouter:dev") and its
// tag ("latest" when ref has none). Digest references are refused: the
// archive names a tag.
func NormalizeRef(ref string) (full, tag string, err error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return "", "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	registry := t.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io" // how containerd and the kubelet spell Docker Hub
	}
	return registry + "/" + t.RepositoryStr() + ":" + t.TagStr(), t.TagStr(), nil
}

// dockerTag is how Docker names a normalized reference in manifest.json.
func dockerTag(full string) string {
	return strings.TrimPrefix(strings.TrimPrefix(full, "docker.io/library/"), "docker.io/")
}

// archiveWriter writes tar entries with fixed metadata and each blob once.
type archiveWriter struct {
	tw      *tar.Writer
	written map[v1.Hash]bool
}

func (aw *archiveWriter) file(name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if strings.HasSuffix(name, "/") {
		hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
	}
	if err := aw.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	if _, err := aw.tw.Write(data); err != nil {
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	return nil
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

func (aw *archiveWriter) blob(h v1.Hash, data []byte) error {
	if aw.written[h] {
		return nil
	}
	aw.written[h] = true
	return aw.file(blobPath(h), data)
}

// image writes an image's manifest, config and layers, and returns its
// manifest.json entry without tags.
func (aw *archiveWriter) image(img v1.Image) (dockerManifest, error) {
	var entry dockerManifest
	rawManifest, err := img.RawManifest()
	if err != nil {
		return entry, err
	}
	digest, err := img.Digest()
	if err != nil {
		return entry, err
	}
	if err := aw.blob(digest, rawManifest); err != nil {
		return entry, err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return entry, err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return entry, err
	}
	if err := aw.blob(configName, rawConfig); err != nil {
		return entry, err
	}
	entry.Config = blobPath(configName)
	layers, err := img.Layers()
	if err != nil {
		return entry, err
	}
	for _, layer := range layers {
		digest, err := layer.Digest()
		if err != nil {
			return entry, err
		}
		rc, err := layer.Compressed()
		if err != nil {
			return entry, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return entry, fmt.Errorf("layer %s: %w", digest, err)
		}
		if err := aw.blob(digest, data); err != nil {
			return entry, err
		}
		entry.Layers = append(entry.Layers, blobPath(digest))
	}
	return entry, nil
}
