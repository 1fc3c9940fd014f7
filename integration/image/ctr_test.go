package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerdImports imports the archive with `ctr image import` into a
// containerd of the test's own (its root, state and socket in a temporary
// directory, its mounts in a mount namespace of its own; the machine's
// containerd, if any, is never touched) and checks that containerd names it,
// lists both platforms and holds every blob. With NFROUTER_IMAGE_TAR set
// (make image-test) it imports that tarball instead of a test image.
func TestContainerdImports(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd (make image-test as root)")
	}
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		t.Skip("containerd not installed (apt-get install containerd)")
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		t.Skip("ctr not installed (apt-get install containerd)")
	}
	archive, ref := os.Getenv("NFROUTER_IMAGE_TAR"), os.Getenv("NFROUTER_IMAGE")
	if archive == "" {
		archive, ref = filepath.Join(t.TempDir(), "image.tar"), "nfrouter:dev"
		if err := os.WriteFile(archive, writeTestArchive(t), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if ref == "" {
		ref = "nfrouter:dev"
	}
	full, _, err := NormalizeRef(ref)
	if err != nil {
		t.Fatal(err)
	}

	sock := startContainerd(t, containerd)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, ctr, append([]string{"--address", sock, "--namespace", "nfrouter-test"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// --all-platforms: keep every platform's content, not only the host's;
	// the host's is unpacked into a snapshot (in the private mount namespace
	// containerd runs in).
	t.Log(run("image", "import", "--all-platforms", archive))
	list := run("image", "ls")
	t.Log(list)
	line := lineWith(list, full)
	if line == "" {
		t.Fatalf("containerd does not list %s", full)
	}
	if !strings.Contains(line, "linux/amd64,linux/arm64") {
		t.Errorf("containerd lists %q, want platforms linux/amd64,linux/arm64", line)
	}
	check := run("image", "check")
	t.Log(check)
	if l := lineWith(check, full); !strings.Contains(l, "complete (2/2)") || !strings.HasSuffix(strings.TrimSpace(l), "true") {
		t.Errorf("image check: %q, want complete (2/2) and unpacked", l)
	}
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, s+" ") {
			return l
		}
	}
	return ""
}

// startContainerd runs a containerd whose root, state and sockets are in a
// temporary directory, in a mount namespace of its own (Go makes it
// private), without its CRI plugin; it is stopped by pid when the test ends.
// It returns the socket once containerd answers on it.
func startContainerd(t *testing.T, bin string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nfrouter-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt"))
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("containerd log:\n%s", logs.String())
		}
	})
	// Wait until it serves: the socket appears once its gRPC server listens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		select {
		case err := <-exited:
			t.Fatalf("containerd exited: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd did not create %s within 30 s\n%s", sock, logs.String())
		}
	}
}
