package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// SliceEvents records when the API server's watch delivers each change to a
// namespace's EndpointSlices, by resourceVersion: a change's latency up to
// the moment an agent's informer can have it (the API server's and etcd's
// share), apart from what the agent then takes to commit it.
type SliceEvents struct {
	stop context.CancelFunc
	done chan struct{}

	// mu protects the fields below.
	mu      sync.Mutex
	arrived map[string]time.Time // resourceVersion → when its event arrived
	err     error                // why the watch ended early
}

// WatchSlices watches ns's EndpointSlices from now on (no initial list).
func WatchSlices(ctx context.Context, client kubernetes.Interface, ns string) (*SliceEvents, error) {
	slices := client.DiscoveryV1().EndpointSlices(ns)
	// A list of one item gives the current resourceVersion to watch from.
	list, err := slices.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("watch slices of %s: list: %w", ns, err)
	}
	ctx, stop := context.WithCancel(ctx)
	w, err := slices.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		stop()
		return nil, fmt.Errorf("watch slices of %s: %w", ns, err)
	}
	s := &SliceEvents{stop: stop, done: make(chan struct{}), arrived: map[string]time.Time{}}
	go s.read(w)
	return s, nil
}

func (s *SliceEvents) read(w watch.Interface) {
	defer close(s.done)
	defer w.Stop()
	for ev := range w.ResultChan() {
		at := time.Now()
		m, err := meta.Accessor(ev.Object)
		if ev.Type == watch.Error || err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("watch slices: %s event: %v", ev.Type, ev.Object)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.arrived[m.GetResourceVersion()] = at
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = errors.New("watch slices: closed by the API server")
	}
	s.mu.Unlock()
}

// Arrived is when the event of resourceVersion rv arrived, or an error when
// it has not (yet) or the watch ended.
func (s *SliceEvents) Arrived(rv string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.arrived[rv]; ok {
		delete(s.arrived, rv)
		return at, nil
	}
	if s.err != nil {
		return time.Time{}, s.err
	}
	return time.Time{}, fmt.Errorf("no watch event of resourceVersion %s", rv)
}

// Close stops watching.
func (s *SliceEvents) Close() {
	s.stop()
	<-s.done
}
