package bgp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// Network namespaces belong to OS threads, and gobgp starts goroutines that
// may run on any thread. So each node's router runs in a process of its own,
// this test binary started again (childEnv set) from a thread inside the
// node's namespace: every socket and netlink handle of the child is then in
// that namespace, whatever thread opens it.

const childEnv = "NFROUTER_BGP_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// childConfig is the part of Config a child takes from its parent.
type childConfig struct {
	Node               string
	GracefulRestart    bool
	PeerRouters        []ExternalPeer
	AdvertiseClusterIP bool
	AdvertiseLBIP      bool
	Overlay            bool
	OverlayType        string
}

// childState is one model snapshot sent to a child, one JSON line each.
type childState struct {
	Nodes     []*model.Node
	Services  []*model.ServicePort
	Endpoints []childEndpoints
}

type childEndpoints struct {
	Key       model.ServicePortKey
	Endpoints model.Endpoints
}

func (s childState) model() *model.State {
	st := &model.State{}
	for _, n := range s.Nodes {
		st.Nodes = st.Nodes.With(n.Name, n)
	}
	for _, sp := range s.Services {
		st.ServicePorts = st.ServicePorts.With(sp.Key, sp)
	}
	for _, e := range s.Endpoints {
		st.Endpoints = st.Endpoints.With(e.Key, e.Endpoints)
	}
	return st
}

// runChild runs a router until its stdin closes, syncing each state line.
func runChild(spec string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var cc childConfig
	if err := json.Unmarshal([]byte(spec), &cc); err != nil {
		log.Error("child config", "error", err)
		return 2
	}
	cfg := DefaultConfig()
	cfg.NodeName, cfg.GracefulRestart, cfg.PeerRouters = cc.Node, cc.GracefulRestart, cc.PeerRouters
	cfg.AdvertiseClusterIP, cfg.AdvertiseLoadBalancerIP = cc.AdvertiseClusterIP, cc.AdvertiseLBIP
	cfg.EnableOverlay = cc.Overlay
	if cc.OverlayType != "" {
		cfg.OverlayType = cc.OverlayType
	}
	cfg.RouteCheckPeriod = time.Second
	cfg.HoldTime = 9 * time.Second
	cfg.Logger = log.With("node", cc.Node)
	r, err := New(cfg)
	if err != nil {
		log.Error("new router", "error", err)
		return 2
	}
	defer r.Close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var s childState
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			log.Error("child state", "error", err)
			return 2
		}
		if err := r.Sync(context.Background(), s.model(), &model.Changes{Full: true}); err != nil {
			log.Error("sync", "error", err)
		}
	}
	return 0
}

// child is a router process in a node namespace.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exit  chan error
}

// startChild starts a router for cfg.Node inside ns.
func startChild(t testing.TB, ns netns.NsHandle, cfg childConfig) *child {
	t.Helper()
	spec, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Start from a thread inside ns: the child inherits the thread's network
	// namespace. (No Pdeathsig: it would follow that short-lived thread.
	// The child ends when its stdin closes instead.)
	if err := kerneltest.Do(ns, cmd.Start); err != nil {
		t.Fatalf("start router for %s: %v", cfg.Node, err)
	}
	c := &child{t: t, cmd: cmd, stdin: stdin, exit: make(chan error, 1)}
	go func() { c.exit <- cmd.Wait() }()
	t.Cleanup(func() { c.stop() })
	return c
}

// send hands the child a new model snapshot.
func (c *child) send(s childState) {
	c.t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("send state: %v", err)
	}
}

// stop closes stdin (the router stops as on SIGTERM) and waits for the exit.
func (c *child) stop() {
	// stdin is nil once stopped. (Not cmd.ProcessState: the goroutine in
	// Wait writes it.) A child that exited on its own is reaped below.
	if c.stdin == nil {
		return
	}
	c.stdin.Close()
	c.stdin = nil
	select {
	case <-c.exit:
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-c.exit
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
	return time.Since(start)
}
