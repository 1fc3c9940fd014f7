package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitEndpoints waits until kube-controller-manager's EndpointSlices for
// service list exactly the addresses of pods as ready endpoints — proof that
// the bed's kubelet writes drive the real controller.
func (b *Bed) WaitEndpoints(ctx context.Context, ns, service string, pods []*Pod, timeout time.Duration) error {
	var want []string
	for _, p := range pods {
		want = append(want, p.IP.String())
	}
	slices.Sort(want)
	var got []string
	_, err := pollUntil(ctx, timeout, func() (struct{}, bool, error) {
		list, err := b.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return struct{}{}, false, fmt.Errorf("endpoint slices of %s/%s: %w", ns, service, err)
		}
		got = got[:0]
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
		}
		slices.Sort(got)
		return struct{}{}, slices.Equal(got, want), nil
	})
	if err != nil {
		return fmt.Errorf("endpoints of %s/%s are %v, want %v: %w", ns, service, got, want, err)
	}
	return nil
}
