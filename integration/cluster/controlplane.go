package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster-wide ranges; node addresses and pod CIDRs are in network.go.
const serviceCIDR = "10.96.0.0/16"

// controlPlane is etcd, kube-apiserver and kube-controller-manager on
// loopback.
type controlPlane struct {
	apiURL string // https://127.0.0.1:<port>
	admin  *rest.Config
}

func (b *Bed) startControlPlane(ctx context.Context, bins Binaries) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcd, err := b.startHost("etcd", bins.Etcd, EtcdArgs(filepath.Join(b.dir, "etcd"), etcdClient, etcdPeer)...)
	if err != nil {
		return err
	}
	if err := WaitHTTP(ctx, etcd, http.DefaultClient, etcdClient+"/health", 30*time.Second); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	b.progress("etcd ready")

	b.cp.apiURL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	api, err := b.startHost("kube-apiserver", bins.APIServer,
		"--etcd-servers="+etcdClient,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--advertise-address=127.0.0.1",
		// The "kubernetes" Service's endpoints would need a routable address.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+b.pki.ServingCert, "--tls-private-key-file="+b.pki.ServingKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+b.pki.SAPub,
		"--service-account-signing-key-file="+b.pki.SAKey,
		"--token-auth-file="+b.pki.TokenFile,
		"--authorization-mode=RBAC",
		// No service-account controller runs, so namespaces have no "default"
		// ServiceAccount for this admission plugin to find.
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--profiling=false")
	if err != nil {
		return err
	}
	b.cp.admin = &rest.Config{
		Host: b.cp.apiURL, BearerToken: b.pki.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.pki.CA},
		QPS:             200, Burst: 400, UserAgent: "nfrouter-testbed",
	}
	if err := WaitHTTP(ctx, api, b.tlsClient(b.pki.AdminToken), b.cp.apiURL+"/readyz", 90*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	b.progress("kube-apiserver ready")

	kcmConfig := filepath.Join(b.dir, "kube-controller-manager.kubeconfig")
	if err := writeKubeconfig(kcmConfig, b.cp.apiURL, b.pki.CA, b.pki.KCMToken); err != nil {
		return err
	}
	// Only the controllers whose output nfrouter reads.
	if _, err := b.startHost("kube-controller-manager", bins.ControllerManager,
		"--kubeconfig="+kcmConfig, "--controllers=endpointslice",
		// Each controller acts as its own ServiceAccount (as kubeadm sets it
		// up), bound by the bootstrap RBAC policy; the kcm user itself may
		// not write EndpointSlices.
		"--use-service-account-credentials=true",
		"--leader-elect=false", "--secure-port=0", "--profiling=false"); err != nil {
		return err
	}
	b.progress("kube-controller-manager started")
	return nil
}

// EtcdArgs are the arguments of a one-member etcd for a test cluster, with
// its data in dataDir, serving clients at clientURL and peers at peerURL.
func EtcdArgs(dataDir, clientURL, peerURL string) []string {
	return []string{"--name=default", "--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Test data need not survive a crash; fsync costs seconds per run.
		"--unsafe-no-fsync", "--log-level=warn"}
}

func (b *Bed) startHost(name, bin string, args ...string) (*Process, error) {
	return b.spawn.StartWithCleanup(&b.cleanups, ProcessSpec{Name: name, Log: filepath.Join(b.dir, name+".log"), NS: -1, Bin: bin, Args: args})
}

// Client returns a client with cluster-admin rights (the harness's own).
func (b *Bed) Client() kubernetes.Interface { return b.client }

func (b *Bed) tlsClient(token string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.pki.CA)
	return &http.Client{Timeout: 5 * time.Second, Transport: &bearer{token: token,
		rt: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// WaitHTTP polls url with c until it answers 200, p exits, or timeout
// passes.
func WaitHTTP(ctx context.Context, p *Process, c *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-p.Done():
			return fmt.Errorf("exited (%v) before %s answered; see %s", p.Err(), url, p.Log)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last: %v); see %s", url, ctx.Err(), last, p.Log)
		case <-tick.C:
		}
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// RESTConfig returns a copy of the harness's admin client configuration, for
// clients that need other rate limits.
func (b *Bed) RESTConfig() *rest.Config { return rest.CopyConfig(b.cp.admin) }
