package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// ScaleServices are many ClusterIP services without selectors whose
// EndpointSlices the harness writes itself (managed-by a name of its own,
// so the controller manager leaves them alone), for scale benchmarks. The
// endpoints' addresses are made up: nothing answers on them, except where a
// caller adds a service pointing at a real pod.
type ScaleServices struct {
	Namespace string
	client    kubernetes.Interface
	// mu protects the fields below.
	mu       sync.Mutex
	slices   []*discoveryv1.EndpointSlice // by service index
	nextAddr uint32                       // fresh addresses for changes
}

// Scale endpoints live in 10.128.0.0/10, fresh addresses of changes in
// 10.192.0.0/10: apart from the bed's pod CIDRs and service range.
var (
	scaleBase  = netip.MustParseAddr("10.128.0.0")
	changeBase = netip.MustParseAddr("10.192.0.0")
)

const scaleManager = "nfrouter-bench"

func addrAt(base netip.Addr, n uint32) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// NewScaleServices uses client (give it generous rate limits) and namespace
// ns, which it creates.
func (b *Bed) NewScaleServices(ctx context.Context, client kubernetes.Interface, ns string) (*ScaleServices, error) {
	if err := b.CreateNamespace(ctx, ns, nil); err != nil {
		return nil, err
	}
	return &ScaleServices{Namespace: ns, client: client}, nil
}

// Len is the number of services made so far.
func (s *ScaleServices) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slices)
}

// Grow creates services (and their slices of perService endpoints) until
// there are n, with workers requests in flight; progress is called now and
// then with the count so far.
func (s *ScaleServices) Grow(ctx context.Context, n, perService, workers int, progress func(done int)) error {
	from := s.Len()
	if n <= from {
		return nil
	}
	made := make([]*discoveryv1.EndpointSlice, n-from)
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sl, err := s.create(ctx, i, perService)
				if err != nil {
					errs <- err
					return
				}
				made[i-from] = sl
				mu.Lock()
				done++
				if done%1000 == 0 && progress != nil {
					progress(from + done)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := from; i < n; i++ {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return err
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.mu.Lock()
	s.slices = append(s.slices, made...)
	s.mu.Unlock()
	return nil
}

func (s *ScaleServices) create(ctx context.Context, i, perService int) (*discoveryv1.EndpointSlice, error) {
	name := fmt.Sprintf("s%05d", i)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := s.client.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create service %s: %w", name, err)
	}
	var addrs []netip.Addr
	for j := range perService {
		addrs = append(addrs, addrAt(scaleBase, uint32(i*perService+j)))
	}
	sl, err := s.client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, endpointSlice(s.Namespace, name, 8080, addrs...), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create endpoint slice of %s: %w", name, err)
	}
	return sl, nil
}

// endpointSlice is the one slice of service svc, all endpoints ready.
func endpointSlice(ns, svc string, port int32, addrs ...netip.Addr) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-bench", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: scaleManager}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &port, Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}})
	}
	return sl
}

// Change replaces the first endpoint of service i by a fresh address and
// returns it with the updated slice's resourceVersion. prepare is called
// with the address just before the update is sent (to start watching for
// it).
func (s *ScaleServices) Change(ctx context.Context, i int, prepare func(netip.Addr)) (addr netip.Addr, resourceVersion string, err error) {
	s.mu.Lock()
	sl := s.slices[i].DeepCopy()
	addr = addrAt(changeBase, s.nextAddr)
	s.nextAddr++
	s.mu.Unlock()
	sl.Endpoints[0].Addresses = []string{addr.String()}
	prepare(addr)
	updated, err := s.client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, sl, metav1.UpdateOptions{})
	if err != nil {
		return addr, "", fmt.Errorf("update endpoint slice %s: %w", sl.Name, err)
	}
	s.mu.Lock()
	s.slices[i] = updated
	s.mu.Unlock()
	return addr, updated.ResourceVersion, nil
}

// PointAt makes a service named name in the scale namespace whose one
// endpoint is pod p's port: the one that answers, for cold-start probes. It
// returns the service's cluster IP and port.
func (s *ScaleServices) PointAt(ctx context.Context, name string, p *Pod, port int32) (netip.Addr, int, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port)}}},
	}
	created, err := s.client.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("create service %s: %w", name, err)
	}
	if _, err := s.client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, endpointSlice(s.Namespace, name, port, p.IP), metav1.CreateOptions{}); err != nil {
		return netip.Addr{}, 0, fmt.Errorf("create endpoint slice of %s: %w", name, err)
	}
	vip, err := netip.ParseAddr(created.Spec.ClusterIP)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("service %s: cluster IP %q: %w", name, created.Spec.ClusterIP, err)
	}
	return vip, 80, nil
}

// WatchChanges watches the scale namespace's slices from now on: when the
// API server delivered each change.
func (s *ScaleServices) WatchChanges(ctx context.Context) (*SliceEvents, error) {
	return WatchSlices(ctx, s.client, s.Namespace)
}
