package main

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clientConfig is client-go's config from --master and --kubeconfig, with one
// difference that matters on clusters without kube-proxy: --master alone, in
// a pod, keeps the pod's service-account token and CA and only replaces the
// address (the in-cluster one, the kubernetes service, works only once
// nfrouter has programmed it). client-go would drop the credentials. Outside
// a pod, and with a kubeconfig, it is client-go's behaviour.
func clientConfig(master, kubeconfig string, inCluster func() (*rest.Config, error)) (*rest.Config, error) {
	if master != "" && kubeconfig == "" {
		if cfg, err := inCluster(); err == nil {
			cfg.Host = master
			return cfg, nil
		}
	}
	return clientcmd.BuildConfigFromFlags(master, kubeconfig)
}
