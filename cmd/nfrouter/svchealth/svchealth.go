// Package svchealth answers load balancers' health checks the way
// kube-proxy does: for every service with a healthCheckNodePort (type
// LoadBalancer, externalTrafficPolicy Local) one HTTP listener on that port
// says whether this node has a ready endpoint of the service, so that the
// load balancer sends traffic only to nodes that can serve it without
// forwarding.
//
// The answer to any path is JSON naming the service, the number of local
// ready endpoints (distinct addresses over all the service's ports) and
// whether the proxy is healthy; the status is 200 when both are good and
// 503 otherwise, and the header X-Load-Balancing-Endpoint-Weight carries the
// count.
//
// The Server is a watch backend: a sync updates the counts (so an answer
// changes within one sync) and opens and closes listeners. A port it cannot
// bind is logged and tried again on the next sync; it does not fail the
// sync, since the proxy itself is fine (DESIGN principle 8).
package svchealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// Config configures a Server.
type Config struct {
	// NodeName is this node's name: endpoints on it are local.
	NodeName string
	// Addresses picks the addresses of this node to listen on
	// (--nodeport-addresses): one listener per address and port. Nil: one
	// listener per port on every address.
	Addresses func(*model.Node) []netip.Addr
	// Healthy reports the proxy's health (nil: healthy); unhealthy answers
	// 503 whatever the count, as kube-proxy does.
	Healthy func() error
	// Listen opens a listener; nil means net.Listen. Tests pass their own.
	Listen func(network, address string) (net.Listener, error)
	Log    *slog.Logger
}

// Server serves the health checks of every service with a
// healthCheckNodePort.
type Server struct {
	cfg Config
	log *slog.Logger

	// ports are the service ports of each service that has a health-check
	// port, for recounting a service when one of its ports changes; only
	// Sync touches it.
	ports map[model.ServiceKey]map[model.ServicePortKey]struct{}
	// listeners are the open listeners by address (invalid: every
	// address) and port; only Sync touches it.
	listeners map[netip.AddrPort]*listener

	// mu protects services.
	mu       sync.Mutex
	services map[model.ServiceKey]service
}

// service is what one service's health check answers.
type service struct {
	port  uint16
	count int
}

type listener struct {
	svc model.ServiceKey
	srv *http.Server
}

// New returns a Server; it listens on nothing until the first Sync.
func New(cfg Config) *Server {
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log.With("part", "service-health"),
		ports: map[model.ServiceKey]map[model.ServicePortKey]struct{}{}, listeners: map[netip.AddrPort]*listener{},
		services: map[model.ServiceKey]service{}}
}

// Name implements watch.Backend.
func (s *Server) Name() string { return "service-health" }

// Kinds implements watch.Backend: service ports (health-check ports),
// endpoints (the counts) and, with Addresses, nodes (this node's
// addresses).
func (s *Server) Kinds() model.Kinds {
	if s.cfg.Addresses != nil {
		return model.KindServicePorts | model.KindEndpoints | model.KindNodes
	}
	return model.KindServicePorts | model.KindEndpoints
}

// Sync implements watch.Backend: it recounts the services changes names
// (all with changes.Full) and opens and closes listeners to match.
func (s *Server) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	touched := map[model.ServiceKey]struct{}{}
	if changes == nil || changes.Full {
		clear(s.ports)
		for k := range s.services {
			touched[k] = struct{}{}
		}
		for k, sp := range state.ServicePorts.All() {
			s.notePort(k, sp)
			touched[k.Service()] = struct{}{}
		}
	} else {
		for k := range changes.ServicePorts {
			s.notePort(k, state.ServicePorts.Get(k))
			touched[k.Service()] = struct{}{}
		}
		for k := range changes.Endpoints {
			touched[k.Service()] = struct{}{}
		}
	}
	s.mu.Lock()
	for svc := range touched {
		if want, ok := s.count(svc, state); ok {
			s.services[svc] = want
		} else {
			delete(s.services, svc)
		}
	}
	hosts := []netip.Addr{{}} // every address
	if s.cfg.Addresses != nil {
		hosts = s.cfg.Addresses(state.Nodes.Get(s.cfg.NodeName))
	}
	want := map[netip.AddrPort]model.ServiceKey{}
	for svc, v := range s.services {
		for _, h := range hosts {
			// Two services cannot share a port (the API server allocates
			// them); should they, the smaller key answers.
			k := netip.AddrPortFrom(h, v.port)
			if have, ok := want[k]; !ok || svc.String() < have.String() {
				want[k] = svc
			}
		}
	}
	s.mu.Unlock()
	s.reconcile(ctx, want)
	return nil
}

// notePort records whether service port k (nil: gone) has a health-check
// port.
func (s *Server) notePort(k model.ServicePortKey, sp *model.ServicePort) {
	svc := k.Service()
	if sp == nil || sp.HealthCheckNodePort == 0 {
		if m := s.ports[svc]; m != nil {
			delete(m, k)
			if len(m) == 0 {
				delete(s.ports, svc)
			}
		}
		return
	}
	if s.ports[svc] == nil {
		s.ports[svc] = map[model.ServicePortKey]struct{}{}
	}
	s.ports[svc][k] = struct{}{}
}

// count works out a service's health-check port and its local ready
// endpoints; false when it has no health-check port.
func (s *Server) count(svc model.ServiceKey, state *model.State) (service, bool) {
	var out service
	local := map[netip.Addr]struct{}{}
	for k := range s.ports[svc] {
		sp := state.ServicePorts.Get(k)
		if sp == nil {
			continue
		}
		out.port = sp.HealthCheckNodePort
		for _, e := range state.Endpoints.Get(k) {
			if e.Ready && e.Node == s.cfg.NodeName {
				local[e.Addr] = struct{}{}
			}
		}
	}
	out.count = len(local)
	return out, out.port != 0
}

// reconcile closes the listeners no service wants and opens the missing
// ones.
func (s *Server) reconcile(ctx context.Context, want map[netip.AddrPort]model.ServiceKey) {
	for at, l := range s.listeners {
		if svc, ok := want[at]; !ok || svc != l.svc {
			l.srv.Close()
			delete(s.listeners, at)
			s.log.InfoContext(ctx, "stopped health-check server", "service", l.svc.String(), "port", at.Port())
		}
	}
	for _, at := range slices.SortedFunc(maps.Keys(want), netip.AddrPort.Compare) {
		if s.listeners[at] != nil {
			continue
		}
		svc, port := want[at], at.Port()
		host := ""
		if at.Addr().IsValid() {
			host = at.Addr().String()
		}
		ln, err := s.cfg.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
		if err != nil {
			s.log.WarnContext(ctx, "cannot serve health check; trying again at the next sync", "service", svc.String(), "port", port, "error", err)
			continue
		}
		srv := &http.Server{Handler: s.handler(svc), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Warn("health-check server stopped", "service", svc.String(), "port", port, "error", err)
			}
		}()
		s.listeners[at] = &listener{svc: svc, srv: srv}
		s.log.InfoContext(ctx, "serving health check", "service", svc.String(), "port", port, "addr", ln.Addr().String())
	}
}

// Close stops every listener.
func (s *Server) Close() {
	for at, l := range s.listeners {
		l.srv.Close()
		delete(s.listeners, at)
	}
}

// answer is the body kube-proxy's health-check servers send.
type answer struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *Server) handler(svc model.ServiceKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		count := s.services[svc].count
		s.mu.Unlock()
		var a answer
		a.Service.Namespace, a.Service.Name = svc.Namespace, svc.Name
		a.LocalEndpoints = count
		a.ServiceProxyHealthy = s.cfg.Healthy == nil || s.cfg.Healthy() == nil
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
		status := http.StatusOK
		if count == 0 || !a.ServiceProxyHealthy {
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(a); err != nil {
			s.log.Debug("health-check answer", "service", svc.String(), "error", fmt.Errorf("write: %w", err))
		}
	})
}
