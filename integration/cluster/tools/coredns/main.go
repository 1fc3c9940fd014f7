// Command coredns is CoreDNS with only the plugins a test cluster's DNS needs
// (kubernetes, cache, errors, health, ready, log): the node tier's cluster DNS
// for upstream's e2e cases that reach services by name. Building it this way
// keeps the cloud plugins' dependencies out of the build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	// Directives keeps CoreDNS's own order; unregistered ones are unused.
	_ = dnsserver.Directives
	coremain.Run()
}
