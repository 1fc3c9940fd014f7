package cluster

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// CloseOnSignal calls closeFn on SIGINT or SIGTERM, saying so (doing) on
// stderr, and exits: deferred cleanups and t.Cleanup would not run when the
// signal kills the process. closeFn must make a caller that closes meanwhile
// wait until the cleanup is done (a sync.Once does), so that neither exits
// half-way. stop ends the watch; call it from closeFn.
func CloseOnSignal(doing string, closeFn func() error) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "\n%v: %s\n", s, doing)
			closeFn()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
