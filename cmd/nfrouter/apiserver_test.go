package main

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestClientConfigMasterKeepsInClusterCredentials(t *testing.T) {
	inPod := func() (*rest.Config, error) {
		return &rest.Config{Host: "https://10.96.0.1:443", BearerTokenFile: "/var/run/secrets/token",
			TLSClientConfig: rest.TLSClientConfig{CAFile: "/var/run/secrets/ca.crt"}}, nil
	}
	cfg, err := clientConfig("https://192.168.50.1:6443", "", inPod)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://192.168.50.1:6443" || cfg.BearerTokenFile != "/var/run/secrets/token" || cfg.CAFile != "/var/run/secrets/ca.crt" {
		t.Errorf("config %+v, want the master's address with the pod's token and CA", cfg)
	}

	notInPod := func() (*rest.Config, error) { return nil, errors.New("not in a pod") }
	cfg, err = clientConfig("https://192.168.50.1:6443", "", notInPod)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://192.168.50.1:6443" || cfg.BearerTokenFile != "" {
		t.Errorf("outside a pod: %+v, want client-go's plain --master config", cfg)
	}
}

func TestClientConfigAsksForProtobuf(t *testing.T) {
	inPod := func() (*rest.Config, error) { return &rest.Config{Host: "https://10.96.0.1:443"}, nil }
	notInPod := func() (*rest.Config, error) { return nil, errors.New("not in a pod") }
	for name, in := range map[string]func() (*rest.Config, error){"in a pod": inPod, "outside a pod": notInPod} {
		cfg, err := clientConfig("https://192.168.50.1:6443", "", in)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ContentType != "application/vnd.kubernetes.protobuf" ||
			cfg.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
			t.Errorf("%s: content type %q, accept %q; want protobuf first", name, cfg.ContentType, cfg.AcceptContentTypes)
		}
	}
}

// The flag must reach the wire: client-go's transport asks for gzip unless
// told not to (and ignores the setting without TLS, hence a TLS server).
func TestDisableCompressionReachesTheRequest(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantGzip bool
	}{
		{nil, false},
		{[]string{"--disable-compression=false"}, true},
	} {
		var got atomic.Value
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.Header.Get("Accept-Encoding"))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
		}))
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
		cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
		cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{}
		cfg.CurrentContext = "test"
		if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
			t.Fatal(err)
		}
		o, err := parseOptions(append([]string{"--kubeconfig", kubeconfig}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		client, err := newClient(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Discovery().ServerVersion(); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		enc, _ := got.Load().(string)
		if gzip := strings.Contains(enc, "gzip"); gzip != tc.wantGzip {
			t.Errorf("%v: Accept-Encoding %q, want gzip asked for: %v", tc.args, enc, tc.wantGzip)
		}
	}
}
