package vm

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CacheEnv names the kernel cache for the tests that boot guests; without it
// they skip, so that plain "go test ./..." stays fast. make test-vm sets it.
const CacheEnv = "NFROUTER_VM_CACHE"

// fixturePackage holds tests that pass, fail, panic the kernel and hang.
const fixturePackage = "github.com/nfrouter/nfrouter/integration/vm/testdata/fixture"

// bootEnv is what the boot tests share: one kernel, one guestinit, one
// compiled fixture.
type bootEnv struct {
	kernel  *Kernel
	init    string
	fixture *TestPackage
	work    string
}

func newBootEnv(t *testing.T) *bootEnv {
	t.Helper()
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		t.Skipf("boots a VM: set %s to the kernel cache (make test-vm does)", CacheEnv)
	}
	for _, tool := range []string{"qemu-system-x86_64", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("boots a VM: %s not found (make setup installs it)", tool)
		}
	}
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := Fetch(ctx, log, cache, DefaultKernels[0])
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	init, err := BuildGuestInit(ctx, "go", work)
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := BuildTestPackage(ctx, "go", work, fixturePackage)
	if err != nil {
		t.Fatal(err)
	}
	return &bootEnv{kernel: k, init: init, fixture: fixture, work: work}
}

// boot runs the fixture with a -test.run pattern and a console that goes to
// the test log.
func (e *bootEnv) boot(t *testing.T, run string, timeout time.Duration) error {
	r := &Runner{
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		WorkDir:   e.work,
		GuestInit: e.init,
		Timeout:   timeout,
		Console:   testLogWriter{t},
	}
	_, err := r.Run(t.Context(), e.kernel, e.fixture, []string{"-test.v", "-test.run=" + run})
	t.Logf("outcome: %v", err)
	return err
}

// TestBootOutcomes proves that the runner reports every way a guest can go
// wrong as an error and passes only passing tests.
func TestBootOutcomes(t *testing.T) {
	e := newBootEnv(t)
	t.Run("pass", func(t *testing.T) {
		t.Parallel()
		if err := e.boot(t, "^TestPass$", time.Minute); err != nil {
			t.Errorf("passing tests: %v", err)
		}
	})
	t.Run("failing test", func(t *testing.T) {
		t.Parallel()
		var tf *TestsFailedError
		if err := e.boot(t, "^(TestPass|TestFail)$", time.Minute); !errors.As(err, &tf) || tf.Status != 1 {
			t.Errorf("failing test: %v, want TestsFailedError with status 1", err)
		}
	})
	t.Run("kernel panic", func(t *testing.T) {
		t.Parallel()
		if err := e.boot(t, "^TestKernelPanic$", time.Minute); !errors.Is(err, ErrKernelPanic) {
			t.Errorf("kernel panic: %v, want ErrKernelPanic", err)
		}
	})
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		if err := e.boot(t, "^TestHang$", 15*time.Second); !errors.Is(err, ErrTimeout) {
			t.Errorf("hang: %v, want ErrTimeout", err)
		}
	})
	t.Run("no end marker", func(t *testing.T) {
		t.Parallel()
		if err := e.boot(t, "^TestPowerOff$", time.Minute); !errors.Is(err, ErrNoEndMarker) {
			t.Errorf("power off without marker: %v, want ErrNoEndMarker", err)
		}
	})
	t.Run("module fails to load", func(t *testing.T) {
		t.Parallel()
		bogus := filepath.Join(t.TempDir(), "bogus.ko")
		if err := os.WriteFile(bogus, []byte("not an ELF module"), 0o644); err != nil {
			t.Fatal(err)
		}
		img := filepath.Join(t.TempDir(), "initramfs.cpio")
		err := Initramfs{
			Init: e.init, TestBinary: e.fixture.Binary,
			ModulesDir: filepath.Dir(bogus), Modules: []Module{{Name: "bogus", Path: "bogus.ko"}},
		}.WriteFile(img)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Boot{Kernel: e.kernel.Image(), Initramfs: img, Args: []string{"-test.run=^TestPass$"}, Timeout: time.Minute, Console: testLogWriter{t}}.Run(t.Context())
		if !errors.Is(err, ErrGuestSetup) {
			t.Errorf("bogus module: %v, want ErrGuestSetup", err)
		}
	})
	t.Run("module missing from kernel", func(t *testing.T) {
		t.Parallel()
		r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkDir: e.work, GuestInit: e.init, Modules: []string{"ip_vs", "no_such_module"}}
		if _, err := r.Run(t.Context(), e.kernel, e.fixture, nil); !errors.Is(err, ErrModuleNotFound) {
			t.Errorf("missing module: %v, want ErrModuleNotFound", err)
		}
	})
}

// testLogWriter sends console lines to the test log (shown with -v or on
// failure).
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Logf("console: %s", bytes.TrimRight(b, "\n"))
	return len(b), nil
}
