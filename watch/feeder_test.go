package watch

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/nfrouter/nfrouter/model"
)

func TestInvalidObjectKeepsWhatWasProgrammedAndRaisesAnEvent(t *testing.T) {
	store := model.NewStore(nil)
	metrics := NewMetrics(nil)
	events := record.NewFakeRecorder(10)
	h := NewFeeder(store, nil, discardLogger(), metrics, events).EventHandler()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	h.OnAdd(svc, false)
	bad := svc.DeepCopy()
	bad.Spec.ExternalIPs = []string{"300.0.0.1"}
	h.OnUpdate(svc, bad)

	state, _ := store.Snapshot()
	key := model.ServicePortKey{Namespace: "ns", Name: "web", Port: "http", Protocol: model.TCP}
	if state.ServicePorts.Get(key) == nil {
		t.Fatal("an invalid update removed the service")
	}
	if got := eventCount(metrics, KindService, resultInvalid); got != 1 {
		t.Errorf("invalid events counted %d, want 1", got)
	}
	select {
	case e := <-events.Events:
		if !strings.HasPrefix(e, "Warning InvalidObject") || !strings.Contains(e, "300.0.0.1") {
			t.Errorf("event = %q", e)
		}
	default:
		t.Error("no Kubernetes Event for the invalid object")
	}

	// Deletion through a tombstone still removes it.
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: bad})
	if state, _ := store.Snapshot(); state.ServicePorts.Len() != 0 {
		t.Error("tombstone did not delete the service")
	}
}
