package vm

import (
	"errors"
	"strings"
	"testing"
)

func TestConsoleOutcome(t *testing.T) {
	tests := []struct {
		name    string
		console string
		check   func(error) bool
	}{
		{"pass", "=== RUN TestX\nPASS\n\x1b[2JNFROUTER-VM-END phase=test status=0 elapsed=1s\r\nreboot: Power down", isNil},
		{"tests fail", "FAIL\nNFROUTER-VM-END phase=test status=1 elapsed=1s\n", testsFailed(1)},
		{"setup fails", "guestinit: load modules: x: exec format error\nNFROUTER-VM-END phase=setup status=125 elapsed=1s\n", is(ErrGuestSetup)},
		{"panic", "[ 2.1] Kernel panic - not syncing: sysrq triggered crash\n[ 2.2] ---[ end Kernel panic ]---\n", is(ErrKernelPanic)},
		{"panic then a marker-like line", "Kernel panic - not syncing: Fatal exception\nNFROUTER-VM-END phase=test status=0\n", is(ErrKernelPanic)},
		{"no marker", "=== RUN TestX\n", is(ErrNoEndMarker)},
		{"marker not at line start", "echo NFROUTER-VM-END phase=test status=0\n", is(ErrNoEndMarker)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w consoleWatcher
			for _, line := range strings.Split(tt.console, "\n") {
				w.Line(line)
			}
			if err := w.Err(); !tt.check(err) {
				t.Errorf("outcome %v", err)
			}
		})
	}
}

func isNil(err error) bool { return err == nil }

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func testsFailed(status int) func(error) bool {
	return func(err error) bool {
		var tf *TestsFailedError
		return errors.As(err, &tf) && tf.Status == status
	}
}
