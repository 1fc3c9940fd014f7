package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/watch"
)

// flakyBackend fails its syncs while err is set.
type flakyBackend struct{ err error }

func (f *flakyBackend) Name() string       { return "service-proxy" }
func (f *flakyBackend) Kinds() model.Kinds { return model.KindServicePorts }
func (f *flakyBackend) Sync(context.Context, *model.State, *model.Changes) error {
	return f.err
}

// TestKernelProxyHealthz serves kube-proxy's /healthz and /livez as
// --healthz-bind-address does, on every address of a node namespace, and asks
// them from a pod on that node as a load balancer or probe would: 200 with
// nodeEligible while the backends keep up, 503 with the error once one has
// failed for longer than the grace period, 200 again when it recovers.
func TestKernelProxyHealthz(t *testing.T) {
	node := netnstest.NewNode(t) // skips without root
	pod := node.AddPod("probe", netip.MustParseAddr("10.244.1.2"))
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	health := watch.NewHealth(clock, time.Minute)
	backend := &flakyBackend{}
	runner := watch.NewRunner(watch.RunnerConfig{Store: model.NewStore(clock.Now), Backends: []watch.Backend{backend},
		Clock: clock, Health: health, Metrics: watch.NewMetrics(prometheus.NewRegistry()), Log: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	if err := kerneltest.Do(node.NS, func() error {
		return serveProxyHealthz(ctx, "0.0.0.0:10256", health, slog.New(slog.DiscardHandler))
	}); err != nil {
		t.Fatal(err)
	}
	// The pod reaches its node at its gateway address; the connection is
	// made in the pod's namespace.
	client := &http.Client{Timeout: netnstest.AllowedTimeout, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = kerneltest.Do(pod.NS, func() error {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		}}}
	ask := func(step string, want int) {
		t.Helper()
		for _, path := range []string{"/healthz", "/livez"} {
			resp, err := client.Get("http://" + netip.AddrPortFrom(netnstest.Gateway4, 10256).String() + path)
			if err != nil {
				t.Fatalf("%s: %s: %v", step, path, err)
			}
			var body struct {
				CurrentTime  string `json:"currentTime"`
				NodeEligible *bool  `json:"nodeEligible"`
				Error        string `json:"error"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != want || body.NodeEligible == nil || !*body.NodeEligible || body.CurrentTime == "" ||
				(want == http.StatusOK) != (body.Error == "") {
				t.Errorf("%s: %s answered %d %+v (decode: %v), want %d with nodeEligible and the time", step, path, resp.StatusCode, body, err, want)
			}
		}
	}

	if err := runner.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ask("synced", http.StatusOK)

	backend.err = errors.New("nftables transaction failed")
	if err := runner.SyncOnce(ctx); err == nil {
		t.Fatal("the failing sync succeeded")
	}
	ask("failing within the grace period", http.StatusOK)
	clock.Step(time.Minute + time.Second)
	ask("failing for longer than the grace period", http.StatusServiceUnavailable)

	backend.err = nil
	if err := runner.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ask("recovered", http.StatusOK)
}
