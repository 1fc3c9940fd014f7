package main

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"
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
