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
