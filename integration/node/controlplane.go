package node

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

	"github.com/vishvananda/netns"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Cluster-wide ranges.
const (
	ServiceCIDR = "10.96.0.0/16"
	PodCIDR     = "10.244.0.0/16"
	// APIServerIP is the control plane's address on the nodes' bridge (kind's
	// control-plane node); the API server listens on APIServerPort there.
	APIServerIP   = "192.168.50.1"
	APIServerPort = 6443
)

// startControlPlane runs etcd, kube-apiserver, kube-controller-manager (its
// default controllers, node IPAM on) and kube-scheduler in the control-plane
// namespace, and a forwarder on the harness's loopback to the API server.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	bins := c.cfg.Binaries
	etcdClient := "http://127.0.0.1:2379"
	etcd, err := c.startCP("etcd", bins.Etcd, cluster.EtcdArgs(filepath.Join(c.dir, "etcd"), etcdClient, "http://127.0.0.1:2380")...)
	if err != nil {
		return err
	}
	inNS := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: nsDialer(c.cpNS)}}
	if err := cluster.WaitHTTP(ctx, etcd, inNS, etcdClient+"/health", 30*time.Second); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	serving, err := c.pki.Serving("apiserver", []net.IP{net.ParseIP(APIServerIP), net.IPv4(127, 0, 0, 1), net.ParseIP("10.96.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	// The API server's client certificate for kubelets (logs, exec).
	kubeletClient, err := c.pki.Client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	port := strconv.Itoa(APIServerPort)
	api, err := c.startCP("kube-apiserver", bins.APIServer,
		"--etcd-servers="+etcdClient,
		"--bind-address=0.0.0.0", "--secure-port="+port, "--advertise-address="+APIServerIP,
		"--tls-cert-file="+serving.Cert, "--tls-private-key-file="+serving.Key,
		"--client-ca-file="+c.pki.CAFile,
		"--kubelet-client-certificate="+kubeletClient.Cert, "--kubelet-client-key="+kubeletClient.Key,
		// Node names resolve nowhere here; their InternalIPs are on br0.
		"--kubelet-preferred-address-types=InternalIP",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.pki.SAPub,
		"--service-account-signing-key-file="+c.pki.SAKey,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--profiling=false")
	if err != nil {
		return err
	}
	if err := c.forwardAPI(); err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	admin, err := c.clientKubeconfig(c.kubeconfig, c.apiURL, "admin", "kubernetes-admin", "system:masters")
	if err != nil {
		return err
	}
	if err := cluster.WaitHTTP(ctx, api, c.httpsClient(admin), c.apiURL+"/readyz", 90*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	c.progress("kube-apiserver ready at %s (%s from the harness)", "https://"+APIServerIP+":"+port, c.apiURL)

	inCP := "https://127.0.0.1:" + port
	kcmConfig := filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
	if _, err := c.clientKubeconfig(kcmConfig, inCP, "kube-controller-manager", "system:kube-controller-manager"); err != nil {
		return err
	}
	if _, err := c.startCP("kube-controller-manager", bins.ControllerManager,
		"--kubeconfig="+kcmConfig, "--authentication-kubeconfig="+kcmConfig, "--authorization-kubeconfig="+kcmConfig,
		// Default controllers, each as its own ServiceAccount (kubeadm's
		// setup); node IPAM gives each node its pod CIDR.
		"--controllers=*", "--use-service-account-credentials=true",
		"--allocate-node-cidrs=true", "--cluster-cidr="+PodCIDR, "--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--root-ca-file="+c.pki.CAFile, "--service-account-private-key-file="+c.pki.SAKey,
		"--leader-elect=false", "--profiling=false"); err != nil {
		return err
	}
	schedConfig := filepath.Join(c.dir, "kube-scheduler.kubeconfig")
	if _, err := c.clientKubeconfig(schedConfig, inCP, "kube-scheduler", "system:kube-scheduler"); err != nil {
		return err
	}
	if _, err := c.startCP("kube-scheduler", bins.Scheduler,
		"--kubeconfig="+schedConfig, "--authentication-kubeconfig="+schedConfig, "--authorization-kubeconfig="+schedConfig,
		"--leader-elect=false", "--profiling=false"); err != nil {
		return err
	}
	c.progress("kube-controller-manager and kube-scheduler started")
	return nil
}

// startCP starts a control-plane process in the control-plane namespace.
func (c *Cluster) startCP(name, bin string, args ...string) (*Process, error) {
	return c.spawn.StartWithCleanup(&c.cleanups, cluster.ProcessSpec{Name: name, Log: filepath.Join(c.dir, name+".log"), NS: c.cpNS, Bin: bin, Args: args})
}

// forwardAPI listens on the harness's loopback and forwards each connection
// to the API server inside the control-plane namespace (TLS passes
// through), so the harness and kubectl reach it without any address of
// the machine's own network.
func (c *Cluster) forwardAPI() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("API forwarder: %w", err)
	}
	c.cleanups.Add("close API forwarder", func() error { l.Close(); return nil })
	c.apiURL = "https://" + l.Addr().String()
	target := net.JoinHostPort(APIServerIP, strconv.Itoa(APIServerPort))
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				up, err := nsDialer(c.cpNS)(context.Background(), "tcp", target)
				if err != nil {
					c.log.Debug("API forwarder: dial", "error", err)
					return
				}
				cluster.Splice(conn, up)
			}()
		}
	}()
	return nil
}

// nsDialer dials from inside network namespace ns.
func nsDialer(ns netns.NsHandle) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := kerneltest.Do(ns, func() error {
			var err error
			d := net.Dialer{Timeout: 5 * time.Second}
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

func (c *Cluster) httpsClient(cred cluster.Credential) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.CA)
	cert, err := tls.LoadX509KeyPair(cred.Cert, cred.Key)
	if err != nil {
		panic(err) // just written by pki
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

// poll calls cond every interval until it reports done, fails, or timeout
// passes.
func poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// clientKubeconfig issues a client certificate named name for user in
// groups and writes path, a kubeconfig for server authenticated by it.
func (c *Cluster) clientKubeconfig(path, server, name, user string, groups ...string) (cluster.Credential, error) {
	cred, err := c.pki.Client(name, user, groups...)
	if err != nil {
		return cluster.Credential{}, err
	}
	return cred, writeKubeconfig(path, server, c.pki.CA, cred)
}

// writeKubeconfig writes a kubeconfig for server authenticated by a client
// certificate.
func writeKubeconfig(path, server string, ca []byte, cred cluster.Credential) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nodes"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: cred.Cert, ClientKey: cred.Key}
	cfg.Contexts["nodes"] = &clientcmdapi.Context{Cluster: "nodes", AuthInfo: "user"}
	cfg.CurrentContext = "nodes"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
