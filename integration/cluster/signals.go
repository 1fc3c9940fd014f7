package cluster

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// CloseOnSignal closes c on SIGINT or SIGTERM, saying so (doing) on stderr,
// and exits: deferred cleanups and t.Cleanup would not run when the signal
// kills the process. It goes through Close, so a caller that closes
// meanwhile (its requests fail as the processes stop) waits until the
// cleanup is done instead of exiting half-way. Ending the watch is a step
// of c: called before any other Add, it is the last to run.
func (c *Cleanups) CloseOnSignal(doing string, log *slog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	c.Add("stop watching signals", func() error { signal.Stop(ch); close(done); return nil })
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "\n%v: %s\n", s, doing)
			c.Close(log)
			os.Exit(130)
		case <-done:
		}
	}()
}
