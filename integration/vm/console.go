package vm

import (
	"regexp"
	"strconv"
	"strings"
)

// endMarker matches the line guestinit prints last, e.g.
// "NFROUTER-VM-END phase=test status=0 elapsed=1.2s".
var endMarker = regexp.MustCompile(`^NFROUTER-VM-END phase=(setup|test) status=(-?\d+)`)

// terminalControl matches the escape sequences that firmware and kernel send
// to clear the screen; they would garble logs.
var terminalControl = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|c)`)

// cleanLine removes the line ending and terminal control sequences.
func cleanLine(line string) string {
	return terminalControl.ReplaceAllString(strings.TrimRight(line, "\r"), "")
}

// panicMarkers start the kernel's panic report.
var panicMarkers = []string{"Kernel panic - not syncing"}

// consoleWatcher follows the guest's console line by line and remembers what
// decides the outcome of a boot.
type consoleWatcher struct {
	ended     bool
	phase     string
	status    int
	panicLine string
}

// Line takes one console line without its line ending.
func (w *consoleWatcher) Line(line string) {
	line = cleanLine(line)
	for _, m := range panicMarkers {
		if i := strings.Index(line, m); i >= 0 && w.panicLine == "" && !w.ended {
			w.panicLine = strings.TrimSpace(line[i:])
		}
	}
	if m := endMarker.FindStringSubmatch(line); m != nil && !w.ended && w.panicLine == "" {
		w.ended = true
		w.phase = m[1]
		w.status, _ = strconv.Atoi(m[2])
	}
}

// Err is the outcome once the console has closed: nil only for an end marker
// of the test phase with status 0.
func (w *consoleWatcher) Err() error {
	switch {
	case w.panicLine != "":
		return &consoleError{ErrKernelPanic, w.panicLine}
	case !w.ended:
		return ErrNoEndMarker
	case w.phase == "setup":
		return &consoleError{ErrGuestSetup, "exit status " + strconv.Itoa(w.status)}
	case w.status != 0:
		return &TestsFailedError{Status: w.status}
	}
	return nil
}

// consoleError adds the console detail to one of the sentinel errors.
type consoleError struct {
	err    error
	detail string
}

func (e *consoleError) Error() string { return e.err.Error() + ": " + e.detail }
func (e *consoleError) Unwrap() error { return e.err }
