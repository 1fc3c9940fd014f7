package vm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// readNewc parses a newc archive into name -> (mode, content).
func readNewc(t *testing.T, b []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	field := func(hdr []byte, i int) int {
		v, err := strconv.ParseUint(string(hdr[6+8*i:14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("header field %d: %v", i, err)
		}
		return int(v)
	}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		hdr := b[off : off+110]
		if string(hdr[:6]) != "070701" {
			t.Fatalf("bad magic at %d: %q", off, hdr[:6])
		}
		mode, size, namesize := field(hdr, 1), field(hdr, 6), field(hdr, 11)
		name := string(b[off+110 : off+110+namesize-1])
		off = align(off + 110 + namesize)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return files
		}
		files[name] = strconv.FormatInt(int64(mode), 8) + ":" + string(b[off:off+size])
		off = align(off + size)
	}
}

func TestInitramfsLayout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	img := Initramfs{
		Init:       write("init", "INIT"),
		TestBinary: write("pkg.test", "TESTS!"),
		SourceDir:  dir,
		PackageDir: "pkg",
		ModulesDir: dir,
		Modules: []Module{
			{Name: "nf_conntrack", Path: "kernel/nf_conntrack.ko"},
			{Name: "crc32c_intel", Path: "kernel/crc32c-intel.ko.xz", Optional: true},
		},
	}
	write("pkg/testdata/golden/a.txt", "golden")
	write("other/testdata/b.txt", "other")
	write("other/code.go", "package other")
	write(".git/testdata/c.txt", "hidden")
	write("kernel/nf_conntrack.ko", "ko1")
	write("kernel/crc32c-intel.ko.xz", "ko2")
	var buf bytes.Buffer
	if err := img.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	files := readNewc(t, buf.Bytes())
	want := map[string]string{
		"init":                           "100755:INIT",
		"test/pkg.test":                  "100755:TESTS!",
		"lib/modules/nf_conntrack.ko":    "100644:ko1",
		"lib/modules/crc32c-intel.ko.xz": "100644:ko2",
		"etc/nfrouter-vm/modules":        "100644:/lib/modules/nf_conntrack.ko\n/lib/modules/crc32c-intel.ko.xz optional\n",
		"dev/console":                    "20600:",
		"src/pkg/testdata/golden":        "40755:",
		"src/pkg/testdata/golden/a.txt":  "100644:golden",
		"src/other/testdata/b.txt":       "100644:other",
		"etc/nfrouter-vm/workdir":        "100644:/src/pkg\n",
	}
	for name, w := range want {
		if files[name] != w {
			t.Errorf("%s: got %q, want %q", name, files[name], w)
		}
	}
	for _, name := range []string{"src/other/code.go", "src/.git/testdata/c.txt"} {
		if _, ok := files[name]; ok {
			t.Errorf("%s copied, want only testdata outside hidden directories", name)
		}
	}
	for name := range files {
		if parent := filepath.Dir(name); parent != "." {
			if _, ok := files[parent]; !ok {
				t.Errorf("%s comes without its directory %s", name, parent)
			}
		}
	}
}
