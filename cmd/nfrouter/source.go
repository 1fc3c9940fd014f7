package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/watch"
)

// sourceOptions say where a subcommand reads the cluster's objects: the
// agent's flags of the same names and meaning.
type sourceOptions struct {
	kubeconfig, master, manifests string
	cacheSyncTimeout              time.Duration
	// client, when set, is the API server to read instead of the one the
	// flags name (tests).
	client kubernetes.Interface
}

func (s *sourceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; in-cluster configuration when neither this nor --master is given.")
	fs.StringVar(&s.master, "master", "", "Address of the Kubernetes API server (overrides the kubeconfig's).")
	fs.StringVar(&s.manifests, "manifests", "", "Read objects from this YAML/JSON file or directory instead of an API server.")
	fs.DurationVar(&s.cacheSyncTimeout, "cache-sync-timeout", time.Minute, "How long to wait for the informer caches to sync.")
}

func (s *sourceOptions) validate() []string {
	var errs []string
	if s.manifests != "" && (s.kubeconfig != "" || s.master != "") {
		errs = append(errs, "--manifests cannot be combined with --kubeconfig or --master")
	}
	if s.cacheSyncTimeout <= 0 {
		errs = append(errs, "--cache-sync-timeout must be positive")
	}
	return errs
}

// agentOptions are the agent's options that loadObjects and newClient read.
func (s *sourceOptions) agentOptions() *options {
	return &options{kubeconfig: s.kubeconfig, master: s.master, manifests: s.manifests, cacheSyncTimeout: s.cacheSyncTimeout}
}

// openModel fills a model store the way the agent does — the same
// manifests loader, or the same informers, which keep it current until ctx
// is done.
func openModel(ctx context.Context, s sourceOptions, log *slog.Logger) (*model.Store, error) {
	o := s.agentOptions()
	client := s.client
	if o.manifests == "" && client == nil {
		var err error
		if client, err = newClient(o); err != nil {
			return nil, err
		}
	}
	store := model.NewStore(nil)
	// The agent's metrics are not served here; a registry of its own keeps
	// the feeder's counters off any global one.
	feeder := watch.NewFeeder(store, nil, log, watch.NewMetrics(prometheus.NewRegistry()), nil)
	if err := loadObjects(ctx, o, client, feeder, log); err != nil {
		return nil, err
	}
	return store, nil
}

// loadModel reads the cluster's objects once and returns the model the
// agent's first sync would see.
func loadModel(ctx context.Context, s sourceOptions, log *slog.Logger) (*model.State, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers: one reading is all a subcommand needs
	store, err := openModel(ctx, s, log)
	if err != nil {
		return nil, err
	}
	st, _ := store.Snapshot()
	return st, nil
}
