package main

import (
	"context"
	"errors"
	"log/slog"
)

// nodeTier is a running set of nodes that e2e.test can reach.
type nodeTier interface {
	Kubeconfig() string
	Close() error
}

// startNodeTier starts o.nodes kubelet nodes with nfrouter from o.nfrouter
// as the only network agent and imports archives (image reference → archive)
// into every node's containerd.
func startNodeTier(ctx context.Context, o options, archives map[string]string, log *slog.Logger) (nodeTier, error) {
	return nil, errors.New("the node tier (kubelet + containerd nodes) is not on this branch yet: run against a cluster with -kubeconfig, after importing the archives in -out/images into its nodes")
}
