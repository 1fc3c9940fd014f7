package watch

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nfrouter/nfrouter/model"
)

// The field report behind nfrouter: a headless service in front of pods with
// three container ports, replaced one by one. kube-router resynced its proxy on
// every endpoint update of that service; here none of it may reach the proxy.

const (
	reportNS   = "churn"
	reportNode = "node-1"
)

func reportPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: reportNode, Containers: []corev1.Container{{
			Name: "web",
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 8080}, {Name: "grpc", ContainerPort: 9090}, {Name: "metrics", ContainerPort: 9100},
			},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func podIP(i int) string { return fmt.Sprintf("10.244.%d.%d", i/250, i%250+1) }

func headlessSlice(endpoints []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: "web-headless-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web-headless", model.LabelHeadless: "",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("grpc"), Port: ptr.To[int32](9090)}, {Name: ptr.To("metrics"), Port: ptr.To[int32](9100)},
		},
		Endpoints: endpoints,
	}
}

// kubelet plays the writes a kubelet and the API server make for one pod
// replacement, and the EndpointSlice controller's updates in between.
type kubelet struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ready  map[string]bool // endpoint IP → ready, for the slice
	writes int
}

func (k *kubelet) updatePod(p *corev1.Pod) *corev1.Pod {
	k.t.Helper()
	out, err := k.client.CoreV1().Pods(p.Namespace).Update(k.ctx, p, metav1.UpdateOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	k.writes++
	return out
}

func (k *kubelet) setReady(p *corev1.Pod, ready bool) *corev1.Pod {
	p = p.DeepCopy()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}, {Type: corev1.ContainersReady, Status: status}}
	return k.updatePod(p)
}

func (k *kubelet) syncSlice() {
	k.t.Helper()
	var eps []discoveryv1.Endpoint
	for ip, ready := range k.ready {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(reportNode),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}})
	}
	if _, err := k.client.DiscoveryV1().EndpointSlices(reportNS).Update(k.ctx, headlessSlice(eps), metav1.UpdateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// create creates pod i, bound to the node and pending.
func (k *kubelet) create(i int) *corev1.Pod {
	k.t.Helper()
	p, err := k.client.CoreV1().Pods(reportNS).Create(k.ctx, reportPod(i), metav1.CreateOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	k.writes++
	return p
}

// run moves pod i from created to running with its IP (not ready yet): the
// pending write with the host IP, then the running one.
func (k *kubelet) run(p *corev1.Pod, i int) *corev1.Pod {
	k.t.Helper()
	p = p.DeepCopy()
	p.Status.HostIP = "192.168.0.1"
	p = k.updatePod(p)
	p = p.DeepCopy()
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, podIP(i), []corev1.PodIP{{IP: podIP(i)}}
	p = k.updatePod(p)
	k.ready[podIP(i)] = false
	k.syncSlice()
	return p
}

// markReady sets pod i ready, as the kubelet and then the slice controller do.
func (k *kubelet) markReady(p *corev1.Pod, i int) *corev1.Pod {
	k.t.Helper()
	p = k.setReady(p, true)
	k.ready[podIP(i)] = true
	k.syncSlice()
	return p
}

// start creates a running, ready pod.
func (k *kubelet) start(i int) *corev1.Pod {
	k.t.Helper()
	return k.markReady(k.run(k.create(i), i), i)
}

// replace replaces pod old by a new pod with index i: graceful delete,
// create, old not ready, new pending, new running, old succeeded, final
// delete, new ready.
func (k *kubelet) replace(old *corev1.Pod, i int) *corev1.Pod {
	k.t.Helper()
	old = old.DeepCopy()
	old.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	old = k.updatePod(old)
	p := k.create(i)
	old = k.setReady(old, false)
	k.ready[podIP(indexOf(old))] = false
	k.syncSlice()
	p = k.run(p, i)
	old = old.DeepCopy()
	old.Status.Phase = corev1.PodSucceeded
	k.updatePod(old)
	if err := k.client.CoreV1().Pods(reportNS).Delete(k.ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		k.t.Fatal(err)
	}
	k.writes++
	delete(k.ready, podIP(indexOf(old)))
	k.syncSlice()
	return k.markReady(p, i)
}

func indexOf(p *corev1.Pod) int {
	var i int
	fmt.Sscanf(p.Name, "web-%d", &i)
	return i
}

func TestFieldReportHeadlessChurnCostsTheProxyNothing(t *testing.T) {
	const replicas, replacements = 100, 30
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: reportNS}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: "web-headless"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
				{Name: "http", Port: 8080}, {Name: "grpc", Port: 9090}, {Name: "metrics", Port: 9100},
			}},
		},
		&networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: "web"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
			},
		},
		headlessSlice(nil),
	)
	metrics := NewMetrics(nil)
	store := model.NewStore(nil)
	firewall := newRecorder("firewall", model.KindPods|model.KindNamespaces|model.KindPolicies)
	proxy := newRecorder("proxy", model.KindServicePorts|model.KindEndpoints|model.KindNodes)
	health := NewHealth(clock.RealClock{}, time.Minute)
	runner := NewRunner(RunnerConfig{Store: store, Backends: []Backend{firewall, proxy}, MinInterval: 10 * time.Millisecond,
		Period: time.Hour, Log: discardLogger(), Metrics: metrics, Health: health})
	feeder := NewFeeder(store, runner.Notify, discardLogger(), metrics, nil)
	if err := StartInformers(ctx, client, feeder, 10*time.Second, discardLogger()); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error)
	go func() { runDone <- runner.Run(ctx) }()
	defer func() { cancel(); <-runDone }()

	k := &kubelet{t: t, ctx: ctx, client: client, ready: map[string]bool{}}
	pods := make([]*corev1.Pod, replicas)
	for i := range pods {
		pods[i] = k.start(i)
	}
	podEvents := func() int {
		return eventCount(metrics, KindPod, resultChanged) + eventCount(metrics, KindPod, resultIgnored)
	}
	eventually(t, "pod events of the start-up", func() bool { return podEvents() == k.writes })
	startWrites := k.writes
	startChanged := eventCount(metrics, KindPod, resultChanged)
	if startChanged != replicas {
		t.Errorf("starting %d pods changed the model %d times, want %d (once each, when it got its IP)", replicas, startChanged, replicas)
	}

	for n := 0; n < replacements; n++ {
		pods[n] = k.replace(pods[n], replicas+n)
	}
	eventually(t, "pod events of the churn", func() bool { return podEvents() == k.writes })
	churnWrites := k.writes - startWrites
	churnChanged := eventCount(metrics, KindPod, resultChanged) - startChanged
	if churnWrites != 8*replacements {
		t.Fatalf("kubelet made %d pod writes, want 8 per replacement", churnWrites)
	}
	// Of the eight writes of a replacement only two matter: the new pod's IP
	// appears and the old pod finishes.
	if churnChanged != 2*replacements {
		t.Errorf("churn changed the model %d times, want %d (two per replacement)", churnChanged, 2*replacements)
	}
	if got := eventCount(metrics, KindEndpointSlice, resultChanged); got != 0 {
		t.Errorf("headless EndpointSlice updates changed the model %d times, want 0", got)
	}
	if got := eventCount(metrics, KindEndpointSlice, resultIgnored); got == 0 {
		t.Error("no EndpointSlice events seen: the test is not exercising the headless path")
	}

	// Wait until the firewall has seen the final set of pods.
	last := model.PodKey{Namespace: reportNS, Name: pods[replacements-1].Name}
	eventually(t, "firewall to see the last pod", func() bool {
		calls := firewall.snapshot()
		s := calls[len(calls)-1].state
		return s.Pods.Get(last) != nil && s.Pods.Len() == replicas && !store.Pending()
	})
	if got := proxy.count(); got != 1 {
		t.Errorf("proxy synced %d times, want 1 (the initial sync)", got)
	}
	for _, c := range firewall.snapshot() {
		if len(c.changes.ServicePorts)+len(c.changes.Endpoints) > 0 {
			t.Errorf("a sync carried service changes: %+v", c.changes)
		}
	}
	t.Logf("%d pod writes → %d model changes → %d firewall syncs, %d proxy syncs",
		k.writes, eventCount(metrics, KindPod, resultChanged), firewall.count(), proxy.count())
}

func TestOnlyWhatAPolicyReadsChangesTheModel(t *testing.T) {
	store := model.NewStore(nil)
	f := NewFeeder(store, nil, discardLogger(), NewMetrics(nil), nil)
	pod := reportPod(1)
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, podIP(1)
	other := reportPod(2)
	other.Status.Phase, other.Status.PodIP = corev1.PodRunning, podIP(2)
	for _, obj := range []runtime.Object{pod, other, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: "web"},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}} {
		if _, err := f.Apply(obj); err != nil {
			t.Fatal(err)
		}
	}
	store.Snapshot()

	// Status conditions, annotations and resource versions are not read.
	p := pod.DeepCopy()
	p.ResourceVersion = "7"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if changed, _ := f.Apply(p); changed {
		t.Error("a status-condition update changed the model")
	}
	if _, c := store.Snapshot(); !c.Empty() {
		t.Errorf("changes after condition update: %+v", c)
	}

	// A relabel of a selected pod changes exactly that pod's key.
	p = p.DeepCopy()
	p.Labels = map[string]string{"app": "web", "version": "2"}
	if changed, _ := f.Apply(p); !changed {
		t.Fatal("relabel did not change the model")
	}
	_, c := store.Snapshot()
	if c.Len() != 1 || !c.Pods.Has(model.PodKey{Namespace: reportNS, Name: pod.Name}) {
		t.Errorf("relabel changes = %+v, want exactly pod %s", c, pod.Name)
	}
}
