package watch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Compact))
	handler := f.EventHandler()
	var delivered []cache.InformerSynced
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
		delivered = append(delivered, reg.HasSynced)
	}
	start := time.Now()
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("watch %v: caches not synced within %s", typ, timeout)
		}
	}
	// A synced cache is not yet a fed model: handlers receive the initial
	// list asynchronously. Without this wait the first sync after a restart
	// saw a partial model and removed set elements it re-added a moment later
	// (found by integration/cluster's TestRestart).
	if !cache.WaitForCacheSync(syncCtx.Done(), delivered...) {
		return fmt.Errorf("watch: initial objects not delivered within %s", timeout)
	}
	log.Info("Informer caches synced", "duration", time.Since(start).Round(time.Millisecond))
	return nil
}
