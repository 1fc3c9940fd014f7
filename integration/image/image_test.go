package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testIndex is a two-platform image whose "binaries" say which platform
// they are for, so that a mix-up shows.
func testIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	var specs []Spec
	for _, arch := range []string{"amd64", "arm64"} {
		specs = append(specs, Spec{Platform: v1.Platform{OS: "linux", Architecture: arch},
			Entrypoint: []string{"/nfrouter"},
			Files:      []File{{Path: "/nfrouter", Mode: 0o755, Data: []byte("binary for " + arch)}}})
	}
	idx, err := Index(specs...)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func writeTestArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteArchive(&buf, "nfrouter:dev", testIndex(t), v1.Platform{OS: "linux", Architecture: "amd64"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// untar extracts an archive into a new directory and returns it.
func untar(t *testing.T, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// layerFiles lists the regular files of an image's only layer with their mode
// and content.
func layerFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (an empty base plus one layer)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = os.FileMode(hdr.Mode).String() + " " + string(data)
	}
}

// TestArchiveOCILayout reads the tarball back as an OCI layout, the way
// containerd's importer does: index.json names the image and points at one
// index with an amd64 and an arm64 image, each running /nfrouter as its
// entrypoint from one layer.
func TestArchiveOCILayout(t *testing.T) {
	dir := untar(t, writeTestArchive(t))
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("index.json has %d descriptors, want 1", len(topManifest.Manifests))
	}
	desc := topManifest.Manifests[0]
	if desc.MediaType != types.OCIImageIndex {
		t.Errorf("index.json points at %s, want an image index", desc.MediaType)
	}
	if got := desc.Annotations[annotationContainerdName]; got != "docker.io/library/nfrouter:dev" {
		t.Errorf("containerd name %q", got)
	}
	if got := desc.Annotations[annotationRefName]; got != "dev" {
		t.Errorf("ref name %q", got)
	}
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("index does not validate: %v", err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var arches []string
	for _, m := range manifest.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		arches = append(arches, m.Platform.OS+"/"+m.Platform.Architecture)
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", m.Platform, mt)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != m.Platform.OS || cfg.Architecture != m.Platform.Architecture {
			t.Errorf("%s: config says %s/%s", m.Platform, cfg.OS, cfg.Architecture)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/nfrouter"}) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q cmd %q, want [/nfrouter] and no cmd", m.Platform, cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
		mf, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(mf.Layers) != 1 || mf.Layers[0].MediaType != types.OCILayer {
			t.Errorf("%s: manifest layers %+v, want one %s", m.Platform, mf.Layers, types.OCILayer)
		}
		files := layerFiles(t, img)
		want := map[string]string{"nfrouter": "-rwxr-xr-x binary for " + m.Platform.Architecture}
		if len(files) != 1 || files["nfrouter"] != want["nfrouter"] {
			t.Errorf("%s: layer files %q, want %q", m.Platform, files, want)
		}
	}
	slices.Sort(arches)
	if !slices.Equal(arches, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %q, want linux/amd64 and linux/arm64", arches)
	}
}

// TestArchiveDockerManifest reads the tarball back the way docker load
// (before Docker 25) does, through manifest.json: the amd64 image, tagged.
func TestArchiveDockerManifest(t *testing.T) {
	data := writeTestArchive(t)
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var entries []dockerManifest
	raw, err := os.ReadFile(filepath.Join(untar(t, data), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !slices.Equal(entries[0].RepoTags, []string{"nfrouter:dev"}) {
		t.Fatalf("manifest.json %s, want one entry tagged nfrouter:dev", raw)
	}
	tag, err := name.NewTag("nfrouter:dev")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("docker image does not validate: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "amd64" || !slices.Equal(cfg.Config.Entrypoint, []string{"/nfrouter"}) {
		t.Errorf("docker image: arch %s entrypoint %q", cfg.Architecture, cfg.Config.Entrypoint)
	}
	if files := layerFiles(t, img); files["nfrouter"] != "-rwxr-xr-x binary for amd64" {
		t.Errorf("docker image layer %q", files)
	}
}

// TestArchiveReproducible: the same files give the same bytes.
func TestArchiveReproducible(t *testing.T) {
	if !bytes.Equal(writeTestArchive(t), writeTestArchive(t)) {
		t.Error("two archives of the same files differ")
	}
}

func TestArchiveNeedsDockerPlatform(t *testing.T) {
	err := WriteArchive(io.Discard, "nfrouter:dev", testIndex(t), v1.Platform{OS: "linux", Architecture: "s390x"})
	if err == nil {
		t.Error("an archive without an image for manifest.json's platform was written")
	}
}

func TestNormalizeRef(t *testing.T) {
	for _, tc := range []struct{ ref, full, tag string }{
		{"nfrouter:dev", "docker.io/library/nfrouter:dev", "dev"},
		{"nfrouter", "docker.io/library/nfrouter:latest", "latest"},
		{"example/nfrouter:v1", "docker.io/example/nfrouter:v1", "v1"},
		{"registry.example:5000/team/nfrouter:v2", "registry.example:5000/team/nfrouter:v2", "v2"},
		{"localhost/nfrouter:x", "localhost/nfrouter:x", "x"},
	} {
		full, tag, err := NormalizeRef(tc.ref)
		if err != nil || full != tc.full || tag != tc.tag {
			t.Errorf("NormalizeRef(%q) = %q, %q, %v; want %q, %q", tc.ref, full, tag, err, tc.full, tc.tag)
		}
	}
	for _, bad := range []string{"", "Nfrouter:dev", "nfrouter@sha256:0123", "nfrouter:"} {
		if _, _, err := NormalizeRef(bad); err == nil {
			t.Errorf("NormalizeRef(%q) accepted", bad)
		}
	}
}

func TestImageCmd(t *testing.T) {
	img, err := Image(Spec{Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
		Files: []File{{Path: "/agnhost", Mode: 0o755, Data: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/agnhost"}) || !slices.Equal(cfg.Config.Cmd, []string{"pause"}) {
		t.Errorf("entrypoint %q cmd %q, want [/agnhost] [pause]", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
}
