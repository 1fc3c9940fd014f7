// Package golden compares test output with files under testdata.
package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// Compare checks got against the file at path; with update it writes got
// there instead (the tests' -update flag).
func Compare(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("differs from golden file %s (-update accepts it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
