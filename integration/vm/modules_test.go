package vm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeModuleDir writes a module directory as depmod leaves it.
func writeModuleDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestResolveModules(t *testing.T) {
	dir := writeModuleDir(t, map[string]string{
		"modules.dep": `kernel/net/netfilter/ipvs/ip_vs_wrr.ko.xz: kernel/net/netfilter/ipvs/ip_vs.ko.xz kernel/net/netfilter/nf_conntrack.ko.xz kernel/lib/libcrc32c.ko.xz
kernel/net/netfilter/ipvs/ip_vs.ko.xz: kernel/net/netfilter/nf_conntrack.ko.xz kernel/lib/libcrc32c.ko.xz
kernel/net/netfilter/nf_conntrack.ko.xz: kernel/lib/libcrc32c.ko.xz
kernel/lib/libcrc32c.ko.xz:
kernel/arch/x86/crypto/crc32c-intel.ko.xz:
kernel/drivers/net/dummy.ko.xz:
`,
		"modules.softdep": "# comment\nsoftdep libcrc32c pre: crc32c\nsoftdep dummy post: no-such-thing\nsoftdep dummy gcm\n",
		"modules.alias":   "alias crc32c crc32c_intel\nalias rtnl-link-* dummy\n",
		"modules.builtin": "kernel/net/ipv6/ipv6.ko\n",
		"modules.builtin.modinfo": "crc32c_generic.alias=crypto-crc32c\x00" +
			"crc32c_generic.license=GPL\x00",
	})
	idx, err := LoadModuleIndex(dir)
	if err != nil {
		t.Fatal(err)
	}

	got, err := idx.Resolve([]string{"ip_vs_wrr", "ip-vs", "ipv6", "dummy", "crypto-crc32c"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{
		{Name: "crc32c_intel", Path: "kernel/arch/x86/crypto/crc32c-intel.ko.xz", Optional: true},
		{Name: "libcrc32c", Path: "kernel/lib/libcrc32c.ko.xz"},
		{Name: "nf_conntrack", Path: "kernel/net/netfilter/nf_conntrack.ko.xz"},
		{Name: "ip_vs", Path: "kernel/net/netfilter/ipvs/ip_vs.ko.xz"},
		{Name: "ip_vs_wrr", Path: "kernel/net/netfilter/ipvs/ip_vs_wrr.ko.xz"},
		{Name: "dummy", Path: "kernel/drivers/net/dummy.ko.xz"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve:\n got %+v\nwant %+v", got, want)
	}

	if _, err := idx.Resolve([]string{"dummy", "no_such_module"}); !errors.Is(err, ErrModuleNotFound) {
		t.Errorf("Resolve of a missing module: %v, want ErrModuleNotFound", err)
	}
}
