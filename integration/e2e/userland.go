package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nfrouter/nfrouter/integration/image"
)

// ShellPackages are the Debian packages whose programs upstream's Services
// tests run in agnhost pods: `/bin/sh -c` scripts with curl, `wget -q -O -
// -T 1`, `nc -v -t|-u -w 2`, `seq`, and `nslookup` for ExternalName services.
// busybox alone does not do (its nc lacks
// -v/-t/-u, its wget -T crashes, its sh prefers its own applets to $PATH).
var ShellPackages = []string{"dash", "curl", "wget", "netcat-openbsd", "coreutils", "bind9-dnsutils"}

// ShellPrograms maps a path in the image to the program's path in the
// unpacked packages. Everything else the image gets is their ELF closure.
var ShellPrograms = map[string][]string{
	"/bin/sh":           {"bin/dash", "usr/bin/dash"},
	"/usr/bin/curl":     {"usr/bin/curl"},
	"/usr/bin/wget":     {"usr/bin/wget"},
	"/usr/bin/nc":       {"bin/nc.openbsd", "usr/bin/nc.openbsd"},
	"/usr/bin/nslookup": {"usr/bin/nslookup"},
	"/usr/bin/dig":      {"usr/bin/dig"},
}

// coreutilsPrograms are the coreutils programs the tests' scripts use or that
// a person debugging a test pod reaches for first.
var coreutilsPrograms = []string{"seq", "cat", "sleep", "echo", "ls", "test", "true", "false", "timeout", "env", "date",
	"head", "tail", "wc", "tr", "cut", "sort", "mkdir", "rm", "id", "uname"}

func init() {
	for _, p := range coreutilsPrograms {
		ShellPrograms["/bin/"+p] = []string{"bin/" + p, "usr/bin/" + p}
	}
}

// ShellUserland returns the image files of ShellPrograms with their dynamic
// loader and shared libraries, from the packages apt's candidate versions
// resolve to (their dependency closure, downloaded and unpacked with
// `apt-get download` and `dpkg -x`, never installed). The unpacked tree is
// cached under cacheDir by the hash of every package's name and version.
// When apt cannot resolve or download (no network), the tree fetched last
// is used, with a warning.
func ShellUserland(ctx context.Context, cacheDir string, log *slog.Logger) ([]image.File, error) {
	dir := filepath.Join(cacheDir, "userland")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shell userland: %w", err)
	}
	root, err := fetchUserland(ctx, dir, log)
	if err != nil {
		last, lerr := os.ReadFile(filepath.Join(dir, "current"))
		if lerr != nil {
			return nil, fmt.Errorf("shell userland: %w (and none cached: %w)", err, lerr)
		}
		root = filepath.Join(dir, strings.TrimSpace(string(last)))
		log.Warn("cannot fetch the shell userland, using the cached one", "dir", root, "err", err)
	}
	return userlandFiles(root)
}

func fetchUserland(ctx context.Context, dir string, log *slog.Logger) (string, error) {
	pkgs, err := resolvePackages(ctx, ShellPackages)
	if err != nil {
		return "", err
	}
	root := filepath.Join(dir, "debian-"+packagesHash(pkgs))
	if _, err := os.Stat(root); err == nil {
		return root, os.WriteFile(filepath.Join(dir, "current"), []byte(filepath.Base(root)+"\n"), 0o644)
	}
	log.Info("Fetching the shell userland", "packages", len(pkgs))
	tmp, err := os.MkdirTemp(dir, ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// The sandbox user cannot write to a root-owned temporary directory.
	args := []string{"-q", "-o", "APT::Sandbox::User=root", "download"}
	for _, p := range pkgs {
		args = append(args, p.name+"="+p.version)
	}
	if err := run(ctx, tmp, "apt-get", args...); err != nil {
		return "", fmt.Errorf("download the shell userland: %w", err)
	}
	debs, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(debs) != len(pkgs) {
		return "", fmt.Errorf("download the shell userland: want %d .deb files, found %d", len(pkgs), len(debs))
	}
	unpacked := filepath.Join(tmp, "root")
	for _, deb := range debs {
		if err := run(ctx, "", "dpkg", "-x", deb, unpacked); err != nil {
			return "", fmt.Errorf("unpack %s: %w", filepath.Base(deb), err)
		}
	}
	if err := os.Rename(unpacked, root); err != nil {
		return "", fmt.Errorf("store the shell userland: %w", err)
	}
	return root, os.WriteFile(filepath.Join(dir, "current"), []byte(filepath.Base(root)+"\n"), 0o644)
}

type debPackage struct{ name, version string }

// resolvePackages returns want and every package they depend on (not
// recommends), each at apt's candidate version.
func resolvePackages(ctx context.Context, want []string) ([]debPackage, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, want...)
	out, err := output(ctx, "apt-cache", args...)
	if err != nil {
		return nil, fmt.Errorf("resolve the shell userland: %w", err)
	}
	names := parseDependsClosure(out)
	out, err = output(ctx, "apt-cache", append([]string{"show", "--no-all-versions"}, names...)...)
	if err != nil {
		return nil, fmt.Errorf("resolve the shell userland: %w", err)
	}
	pkgs := parseShowVersions(out)
	if len(pkgs) != len(names) {
		return nil, fmt.Errorf("resolve the shell userland: apt-cache show gave %d versions for %d packages", len(pkgs), len(names))
	}
	return pkgs, nil
}

// parseDependsClosure returns the real packages of `apt-cache depends
// --recurse` output: unindented lines, without virtual ones ("<name>").
func parseDependsClosure(out []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == ' ' || line[0] == '<' {
			continue
		}
		names = append(names, strings.TrimSpace(line))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// parseShowVersions reads Package and Version of each stanza of
// `apt-cache show`, sorted by name.
func parseShowVersions(out []byte) []debPackage {
	var pkgs []debPackage
	var cur debPackage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Package: "); ok {
			cur = debPackage{name: v}
		} else if v, ok := strings.CutPrefix(line, "Version: "); ok && cur.name != "" {
			cur.version = v
			pkgs = append(pkgs, cur)
			cur = debPackage{}
		}
	}
	slices.SortFunc(pkgs, func(a, b debPackage) int { return strings.Compare(a.name, b.name) })
	return pkgs
}

func packagesHash(pkgs []debPackage) string {
	h := sha256.New()
	for _, p := range pkgs {
		fmt.Fprintf(h, "%s=%s\n", p.name, p.version)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// userlandFiles reads ShellPrograms and their ELF closure from root.
func userlandFiles(root string) ([]image.File, error) {
	c := newClosure(root)
	for _, dst := range slicesSortedKeys(ShellPrograms) {
		src, err := firstExisting(root, ShellPrograms[dst])
		if err != nil {
			return nil, fmt.Errorf("shell userland %s: %w", dst, err)
		}
		if err := c.addProgram(dst, src); err != nil {
			return nil, fmt.Errorf("shell userland %s: %w", dst, err)
		}
	}
	return c.files, nil
}

func firstExisting(root string, candidates []string) (string, error) {
	for _, rel := range candidates {
		p := filepath.Join(root, rel)
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("none of %s in the unpacked packages", strings.Join(candidates, ", "))
}

func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func output(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, args[0], err, stderr.Bytes())
	}
	return out, nil
}
