package ipvs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cipvs "github.com/cloudflare/ipvs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"
	"k8s.io/utils/clock"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/watch"
)

// TestOnceFromManifests follows the path of `nfrouter --manifests DIR
// --hostname-override node-1 --run-firewall=false --run-service-proxy=true
// --service-proxy=ipvs --run-router=false --once` (cmd/nfrouter agent and
// newServiceProxy) in a fresh network namespace: load the manifests into the
// store, build the proxy in the namespace, one full sync through the runner.
// cmd/nfrouter's TestOnceProgramsServices runs the command itself.
func TestOnceFromManifests(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	store := model.NewStore(nil)
	var syncErr error
	err := kerneltest.Do(ns, func() error {
		if err := ipvs.Available(); err != nil {
			return err
		}
		p, err := ipvs.New(ipvs.Config{PlanConfig: ipvs.PlanConfig{NodeName: "node-1"}, GracePeriod: 30 * time.Second,
			Logger: log, Registerer: reg})
		if err != nil {
			return err
		}
		defer p.Close()
		metrics := watch.NewMetrics(reg)
		runner := watch.NewRunner(watch.RunnerConfig{Store: store, Backends: []watch.Backend{p}, Period: time.Minute,
			Log: log, Metrics: metrics, Health: watch.NewHealth(clock.RealClock{}, time.Minute)})
		feeder := watch.NewFeeder(store, runner.Notify, log, metrics, nil)
		if _, errs := watch.LoadManifests(filepath.Join("testdata", "manifests"), feeder); len(errs) > 0 {
			t.Errorf("manifests: %v", errs)
		}
		syncErr = runner.SyncOnce(context.Background())
		return nil
	})
	if err != nil {
		kerneltest.MissingFeature(t, "IPVS", err)
	}
	if syncErr != nil {
		t.Fatalf("sync: %v", syncErr)
	}
	if got, want := readIPVS(t, ns), expectedFromManifests; got != want {
		t.Errorf("IPVS after --once:\n%s\nwant:\n%s", got, want)
	}
}

// expectedFromManifests is what testdata/manifests programs on node-1: the
// headless service nothing, the unknown scheduler the default.
const expectedFromManifests = `tcp/10.96.0.10:80 lc persistent=10800 -> 10.244.1.10:8080 w=1, 10.244.2.10:8080 w=1
tcp/10.96.0.77:8443 rr -> 
tcp/192.168.1.10:30080 lc persistent=10800 -> 10.244.1.10:8080 w=1, 10.244.2.10:8080 w=1
udp/10.96.0.53:53 rr -> 10.244.2.53:53 w=1
`

// readIPVS lists the IPVS services of ns in a short canonical form.
func readIPVS(t testing.TB, ns netns.NsHandle) string {
	t.Helper()
	var lines []string
	err := kerneltest.Do(ns, func() error {
		c, err := cipvs.New()
		if err != nil {
			return err
		}
		svcs, err := c.Services()
		if err != nil {
			return err
		}
		for _, s := range svcs {
			line := fmt.Sprintf("%s/%s %s", strings.ToLower(s.Protocol.String()), netip.AddrPortFrom(s.Address, s.Port), s.Scheduler)
			if s.Flags&cipvs.ServicePersistent != 0 {
				line += fmt.Sprintf(" persistent=%d", s.Timeout)
			}
			dests, err := c.Destinations(s.Service)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			var ds []string
			for _, d := range dests {
				ds = append(ds, fmt.Sprintf("%s w=%d", netip.AddrPortFrom(d.Address, d.Port), d.Weight))
			}
			slices.Sort(ds)
			lines = append(lines, line+" -> "+strings.Join(ds, ", ")+"\n")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read IPVS: %v", err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}
