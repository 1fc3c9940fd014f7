// Command testserver is the node tier's test server: it answers every HTTP
// request with its host name (the pod's name). On SIGTERM it keeps serving
// for -drain, as a well-behaved server does while its endpoint is removed,
// then exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "address to serve on")
	drain := flag.Duration("drain", 3*time.Second, "how long to keep serving after SIGTERM")
	flag.Parse()
	name, err := os.Hostname()
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, name)
	})}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		time.Sleep(*drain) // the endpoint's removal reaches every node meanwhile
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
