// Command pause is the node tier's sandbox image: it holds a pod's
// namespaces and exits on SIGTERM or SIGINT, as Kubernetes' pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	// As PID 1 of a pod with a shared process namespace it would reap
	// orphans; the node tier's pods do not share theirs.
	<-ch
}
