package nft

import (
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
)

// genServices makes n ClusterIP services (10.96.0.0/16) with k ready
// endpoints each (unique addresses in 10.128.0.0/9), on other nodes.
func genServices(n, k int) *model.State {
	st := &model.State{
		Nodes: model.MapOf(map[string]*model.Node{"node-a": {Name: "node-a", InternalIPs: modeltest.Addrs("192.168.1.10"),
			PodCIDRs: prefixesOf("10.0.0.0/8")}})}
	for i := range n {
		key := model.ServicePortKey{Namespace: "ns" + strconv.Itoa(i%100), Name: "svc" + strconv.Itoa(i), Protocol: model.TCP}
		st.ServicePorts = st.ServicePorts.With(key, &model.ServicePort{Key: key, Port: 80,
			ClusterIPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})}})
		eps := make(model.Endpoints, k)
		for j := range eps {
			eps[j] = benchEndpoint(i*k + j)
		}
		st.Endpoints = st.Endpoints.With(key, eps)
	}
	return st
}

func benchEndpoint(n int) model.Endpoint {
	return model.Endpoint{Addr: netip.AddrFrom4([4]byte{10, 128 | byte(n>>16), byte(n >> 8), byte(n)}), Port: 8080,
		Node: "node-b", EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}}
}

func newServiceProxyIn(t testing.TB, ns int) *Backend {
	t.Helper()
	b := newServiceProxyBackend(t, ns)
	t.Cleanup(func() { b.Close() })
	return b
}

// newServiceProxyBackend is newServiceProxyIn for the caller to close.
func newServiceProxyBackend(t testing.TB, ns int) *Backend {
	t.Helper()
	b, err := New(Config{NetNSFd: ns})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewServiceProxy(b.Table(), ServiceProxyConfig{NodeName: "node-a", NetNSFd: ns})
	if err != nil {
		t.Fatal(err)
	}
	b.Add(p)
	return b
}

// replaceEndpoint replaces endpoint j of service port k by one with a new
// address, as a rolling update does, and returns the changes.
func replaceEndpoint(st *model.State, k model.ServicePortKey, j, fresh int) *model.Changes {
	eps := slices.Clone(st.Endpoints.Get(k))
	eps[j] = benchEndpoint(fresh)
	slices.SortFunc(eps, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
	st.Endpoints = st.Endpoints.With(k, eps)
	ch := &model.Changes{}
	ch.Endpoints.Add(k)
	return ch
}

// BenchmarkServiceProxyColdStart programs 10,000 services with 10
// endpoints each into an empty namespace: planning and one transaction.
func BenchmarkServiceProxyColdStart(b *testing.B) {
	kerneltest.RequireRoot(b)
	st := genServices(10000, 10)
	var last Stats
	for b.Loop() {
		b.StopTimer()
		ns := kerneltest.NewNetNS(b)
		bk := newServiceProxyBackend(b, int(ns))
		b.StartTimer()
		last = syncOK(b, bk, st, &model.Changes{Full: true})
		b.StopTimer()
		bk.Close() // and let it go: b.Cleanup would keep every one alive
		b.StartTimer()
	}
	b.ReportMetric(float64(last.Messages), "msgs/op")
	b.ReportMetric(float64(last.ElementsAdded), "elements/op")
}

// BenchmarkServiceProxyEndpointChange measures one endpoint replaced (one
// sync: planning, transaction) at 10,000 services × 10 endpoints, and the
// memory the planner and its table hold at that scale.
func BenchmarkServiceProxyEndpointChange(b *testing.B) {
	kerneltest.RequireRoot(b)
	st := genServices(10000, 10)
	keys := slices.SortedFunc(st.ServicePorts.Keys(), func(a, b model.ServicePortKey) int { return strings.Compare(a.Name, b.Name) })
	ns := kerneltest.NewNetNS(b)
	heapBefore := heapInUse()
	b.Logf("heap with the model only: %.1f MiB", float64(heapBefore)/(1<<20))
	bk := newServiceProxyIn(b, int(ns))
	syncOK(b, bk, st, &model.Changes{Full: true})
	heap := heapInUse() - heapBefore
	var durations []time.Duration
	msgs := 0
	i := 0
	for b.Loop() {
		ch := replaceEndpoint(st, keys[i%len(keys)], i%10, 200000+i)
		start := time.Now()
		s := syncOK(b, bk, st, ch)
		durations = append(durations, time.Since(start))
		msgs += s.Messages
		i++
	}
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[min(len(durations)-1, int(p*float64(len(durations))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs/sync")
	b.ReportMetric(pct(0.99), "p99-µs/sync")
	b.ReportMetric(float64(msgs)/float64(len(durations)), "msgs/sync")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	// The peak is the cold start's transaction being built; the resident
	// set afterwards, once freed memory is returned, is what stays.
	b.ReportMetric(statusMiB("VmHWM:"), "peak-rss-MiB")
	debug.FreeOSMemory()
	b.ReportMetric(statusMiB("VmRSS:"), "rss-MiB")
	runtime.KeepAlive(bk)
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// statusMiB reads a size field of /proc/self/status (VmRSS, VmHWM) of this
// process: the test binary, the generated model and the backend.
func statusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == field {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// TestKernelServiceEndpointChangeIsElementOnly replaces endpoints of
// services at a moderate scale and checks that every transaction held set
// element messages only, two to four of them.
func TestKernelServiceEndpointChangeIsElementOnly(t *testing.T) {
	kerneltest.RequireRoot(t)
	st := genServices(500, 10)
	ns := kerneltest.NewNetNS(t)
	bk := newServiceProxyIn(t, int(ns))
	syncOK(t, bk, st, &model.Changes{Full: true})
	i := 0
	for k := range st.ServicePorts.All() {
		if i == 50 {
			break
		}
		s := syncOK(t, bk, st, replaceEndpoint(st, k, i%10, 100000+i))
		for typ := range s.ByType {
			if typ != "newsetelem" && typ != "delsetelem" {
				t.Errorf("endpoint change sent %s messages: %v", typ, s.ByType)
			}
		}
		// The endpoint map: its deleted and its added slots.
		if s.Messages == 0 || s.Messages > 4 {
			t.Errorf("endpoint change took %d messages (%v); want 1 to 4", s.Messages, s.ByType)
		}
		i++
	}
	if s := syncOK(t, bk, st, &model.Changes{Full: true}); s.Messages != 0 {
		t.Errorf("full sync after churn found drift: %v", s.ByType)
	}
}
