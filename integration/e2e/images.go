package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nfrouter/nfrouter/integration/image"
)

// imageEnv is the PATH of a Debian image; exec'd commands inherit it.
var imageEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// etcFiles stand in for the ones upstream's Alpine base brings: a user and
// group the image defines (as upstream's agnhost does), and hosts lookups
// in /etc/hosts (mounted by the kubelet) before DNS.
var etcFiles = []image.File{
	{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user:/bin/sh\n")},
	{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")},
	{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\nservices: files\n")},
}

// AgnhostSpec is the agnhost image: the static agnhost binary as the
// entrypoint (default argument "pause", as upstream's) and the shell
// userland the Services tests exec.
func AgnhostSpec(agnhost []byte, userland []image.File) image.Spec {
	files := []image.File{{Path: "/agnhost", Mode: 0o755, Data: agnhost}}
	files = append(files, etcFiles...)
	files = append(files, userland...)
	return image.Spec{Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: imageEnv, Files: files}
}

// WriteImage writes spec as an image archive for `ctr image import`, named
// ref, to path.
func WriteImage(path, ref string, spec image.Spec) error {
	idx, err := image.Index(spec)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	defer os.Remove(tmp)
	if err := image.WriteArchive(f, ref, idx, spec.Platform); err != nil {
		f.Close()
		return fmt.Errorf("image %s: %w", ref, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return os.Rename(tmp, path)
}

// ListImages asks e2e.test which image references its tests use
// (`e2e.test --list-images`, one per line).
func ListImages(ctx context.Context, e2eTest string) ([]string, error) {
	out, err := output(ctx, e2eTest, "--list-images")
	if err != nil {
		return nil, err
	}
	return parseImageList(out), nil
}

func parseImageList(out []byte) []string {
	var refs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Count(line, ":") >= 1 && strings.Contains(line, "/") && !strings.ContainsAny(line, " \t") {
			refs = append(refs, line)
		}
	}
	return refs
}

// ImageNamed returns the reference in refs whose repository ends in
// "/"+name, the newest tag when there are several (e2e.test lists agnhost
// 2.66.1, the one its framework runs, beside older tags a few cases pin).
func ImageNamed(refs []string, name string) (string, error) {
	best, bestTag := "", ""
	for _, r := range refs {
		repo, tag := r, ""
		if i := strings.LastIndex(r, ":"); i > strings.LastIndex(r, "/") {
			repo, tag = r[:i], r[i+1:]
		}
		if strings.HasSuffix(repo, "/"+name) && (best == "" || compareVersions(tag, bestTag) > 0) {
			best, bestTag = r, tag
		}
	}
	if best == "" {
		return "", fmt.Errorf("e2e.test --list-images names no %s image", name)
	}
	return best, nil
}

// compareVersions compares dotted numeric versions ("2.66.1" > "2.55" >
// "2.6"); a part that is not a number compares as text.
func compareVersions(a, b string) int {
	as, bs := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.Atoi(x)
		yn, yerr := strconv.Atoi(y)
		switch {
		case xerr == nil && yerr == nil && xn != yn:
			return cmp.Compare(xn, yn)
		case (xerr != nil || yerr != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}
