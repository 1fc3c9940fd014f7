package main

import (
	"encoding/json"
	"os"
	"testing"
)

// The committed results.md was rendered from the committed results.json:
// rendering them again must give it back, byte for byte.
func TestMarkdownRendersCommittedResults(t *testing.T) {
	raw, err := os.ReadFile("results/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	memLimit := ""
	for _, r := range rep.Results {
		if r.Impl == "nfrouter" && r.Services*r.Endpoints <= deploySizedFor {
			memLimit = r.MemLimit
		}
	}
	want, err := os.ReadFile("results/results.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := markdown(rep, memLimit); got != string(want) {
		t.Errorf("markdown(results.json) differs from results.md:\n%s", got)
	}
}
