package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Run is one e2e.test run and what came of it.
type Run struct {
	Suite    Suite
	Results  []Result
	Duration time.Duration
	// ExitErr is e2e.test's own verdict (non-nil when any case failed).
	ExitErr error
}

// RunSuite runs e2e.test for suite against the cluster of kubeconfig, its
// output to log, and reads the results from its JUnit report in reportDir.
// A failing case is not an error; a run that leaves no report is.
func RunSuite(ctx context.Context, e2eTest string, suite Suite, kubeconfig string, nodes int, reportDir string, log io.Writer) (Run, error) {
	focus, skip, err := suite.Patterns()
	if err != nil {
		return Run{}, err
	}
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		return Run{}, fmt.Errorf("e2e %s: %w", suite.Name, err)
	}
	report := filepath.Join(reportDir, "junit_01.xml")
	if err := os.Remove(report); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Run{}, fmt.Errorf("e2e %s: old report: %w", suite.Name, err)
	}
	cmd := exec.CommandContext(ctx, e2eTest, suite.Args(kubeconfig, reportDir, nodes)...)
	cmd.Stdout, cmd.Stderr = log, log
	// e2e.test writes temporary files (kubectl configs) relative to its
	// working directory.
	cmd.Dir = reportDir
	start := time.Now()
	exitErr := cmd.Run()
	run := Run{Suite: suite, Duration: time.Since(start), ExitErr: exitErr}
	f, err := os.Open(report)
	if err != nil {
		return run, fmt.Errorf("e2e %s: no report (e2e.test: %v): %w", suite.Name, exitErr, err)
	}
	defer f.Close()
	run.Results, err = ParseJUnit(f, focus, skip)
	if err != nil {
		return run, fmt.Errorf("e2e %s: %w", suite.Name, err)
	}
	return run, nil
}
