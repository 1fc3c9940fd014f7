package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clientConfig is client-go's config from --master and --kubeconfig, with one
// difference that matters on clusters without kube-proxy: --master alone, in
// a pod, keeps the pod's service-account token and CA and only replaces the
// address (the in-cluster one, the kubernetes service, works only once
// nfrouter has programmed it). client-go would drop the credentials. Outside
// a pod, and with a kubeconfig, it is client-go's behaviour.
//
// Either way the client asks for protobuf, as kube-proxy does: every kind
// nfrouter watches is built in, and decoding the initial list of 10,000
// services and their EndpointSlices from protobuf instead of JSON is a good
// part of a cold start at that size.
func clientConfig(master, kubeconfig string, inCluster func() (*rest.Config, error)) (*rest.Config, error) {
	if master != "" && kubeconfig == "" {
		if cfg, err := inCluster(); err == nil {
			cfg.Host = master
			return preferProtobuf(cfg), nil
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags(master, kubeconfig)
	if err != nil {
		return nil, err
	}
	return preferProtobuf(cfg), nil
}

// preferProtobuf makes the client send protobuf and accept it, JSON still
// accepted for anything a server cannot encode as protobuf.
func preferProtobuf(cfg *rest.Config) *rest.Config {
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}
