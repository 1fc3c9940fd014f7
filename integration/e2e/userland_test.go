package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseDependsClosure(t *testing.T) {
	out := []byte("curl\n  Depends: libc6\n  Depends: libcurl4\nlibc6\n  Depends: libgcc-s1\n<mail-transport-agent>\nlibcurl4\n  Depends: libc6\nlibc6\n")
	got := parseDependsClosure(out)
	if want := []string{"curl", "libc6", "libcurl4"}; !slices.Equal(got, want) {
		t.Errorf("closure %q, want %q", got, want)
	}
}

func TestParseShowVersions(t *testing.T) {
	out := []byte("Package: wget\nSource: wget\nVersion: 1.21.3-1+b2\nDepends: libc6\n\nPackage: dash\nVersion: 0.5.12-2\n\n")
	got := parseShowVersions(out)
	want := []debPackage{{"dash", "0.5.12-2"}, {"wget", "1.21.3-1+b2"}}
	if !slices.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	if packagesHash(got) == packagesHash([]debPackage{{"dash", "0.5.12-3"}, {"wget", "1.21.3-1+b2"}}) {
		t.Error("a new version left the cache key as it was")
	}
}

// The closure of a program in an unpacked root follows its loader and
// libraries there, through symbolic links (absolute ones taken inside the
// root), and copies them as regular files. The host's own /bin/true and
// libraries stand in for unpacked packages.
func TestClosureInsideRoot(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	const loader = "/lib64/ld-linux-x86-64.so.2"
	for _, p := range []string{"/bin/true", libc, loader} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs a Debian amd64 host's %s: %v", p, err)
		}
	}
	root := t.TempDir()
	copyTo := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyTo("/bin/true", "bin/true")
	copyTo(libc, "usr/lib/x86_64-linux-gnu/libc-real.so")
	copyTo(loader, "usr/lib/x86_64-linux-gnu/ld-real.so")
	if err := os.MkdirAll(filepath.Join(root, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib/x86_64-linux-gnu/ld-real.so", filepath.Join(root, "lib64/ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libc-real.so", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libc.so.6")); err != nil {
		t.Fatal(err)
	}
	c := newClosure(root)
	if err := c.addProgram("/bin/true", filepath.Join(root, "bin/true")); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range c.files {
		paths = append(paths, f.Path)
	}
	for _, want := range []string{"/bin/true", loader, libc} {
		if !slices.Contains(paths, want) {
			t.Errorf("closure %q lacks %s", paths, want)
		}
	}
	if err := c.add("/bin/escape", filepath.Join(root, "escape")); err == nil {
		t.Error("a missing file was added")
	}
	if err := os.Symlink("../../../../etc/passwd", filepath.Join(root, "bin/out")); err != nil {
		t.Fatal(err)
	}
	if err := c.add("/bin/out", filepath.Join(root, "bin/out")); err == nil {
		t.Error("a link leaving the root was followed")
	}
}
