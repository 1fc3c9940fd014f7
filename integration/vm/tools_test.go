package vm

import (
	"os/exec"
	"slices"
	"testing"
)

func TestResolveToolsFindsLoaderAndLibraries(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this host")
	}
	files, err := ResolveTools([]string{"sh"})
	if err != nil {
		t.Fatal(err)
	}
	var dsts []string
	for _, f := range files {
		dsts = append(dsts, f.Dst)
	}
	for _, want := range []string{"bin/sh", "lib/tools/libc.so.6"} {
		if !slices.Contains(dsts, want) {
			t.Errorf("ResolveTools(sh) = %v, lacks %s", dsts, want)
		}
	}
	if !slices.Contains(dsts, "lib64/ld-linux-x86-64.so.2") {
		t.Errorf("ResolveTools(sh) = %v, lacks the dynamic loader", dsts)
	}
	if _, err := ResolveTools([]string{"no-such-program-here"}); err == nil {
		t.Error("ResolveTools of a missing program succeeded")
	}
}
