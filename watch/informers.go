package watch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// StartInformers starts shared informers for every kind the model reads, feeding
// f, and waits until their caches have synced or timeout has passed. The
// informers stop when ctx is done.
func StartInformers(ctx context.Context, client kubernetes.Interface, f *Feeder, timeout time.Duration, log *slog.Logger) error {
	// No resync: the Runner's periodic full sync re-reads the model, and an
	// informer resync would only replay unchanged objects.
	listInitialState()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Compact))
	handler := f.EventHandler()
	var synced []cache.InformerSynced
	for kind, inf := range map[string]cache.SharedIndexInformer{
		KindPod:           factory.Core().V1().Pods().Informer(),
		KindNamespace:     factory.Core().V1().Namespaces().Informer(),
		KindNetworkPolicy: factory.Networking().V1().NetworkPolicies().Informer(),
		KindService:       factory.Core().V1().Services().Informer(),
		KindEndpointSlice: factory.Discovery().V1().EndpointSlices().Informer(),
		KindNode:          factory.Core().V1().Nodes().Informer(),
	} {
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return fmt.Errorf("watch %s: add handler: %w", kind, err)
		}
		// A synced cache is not yet a fed model: handlers receive the
		// initial list asynchronously, and the registration's HasSynced
		// waits for both. Without it the first sync after a restart saw a
		// partial model and removed set elements it re-added a moment
		// later (found by integration/cluster's TestRestart).
		synced = append(synced, reg.HasSynced)
	}
	start := time.Now()
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Polled every 10 ms, not client-go's 100 ms: the wait is part of
	// every cold start.
	err := wait.PollUntilContextCancel(syncCtx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("watch: initial objects not delivered within %s: %w", timeout, err)
	}
	log.Info("Informer caches synced", "duration", time.Since(start).Round(time.Millisecond))
	return nil
}
