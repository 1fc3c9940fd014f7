package watch

import (
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nfrouter/nfrouter/model"
)

// TestSlimKeepsTriggerTime checks that an EndpointSlice keeps its
// last-change-trigger-time through the transform, and that the model reads
// it: network programming latency is measured from it.
func TestSlimKeepsTriggerTime(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
			Annotations: map[string]string{model.AnnotationTriggerTime: "2026-12-01T10:00:00.5Z",
				"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if _, err := Slim(s); err != nil {
		t.Fatal(err)
	}
	if len(s.Annotations) != 1 {
		t.Errorf("annotations after Slim: %v, want the trigger time only", s.Annotations)
	}
	want := time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.UTC)
	if got := model.EndpointSliceFromAPI(s).TriggerTime; !got.Equal(want) {
		t.Errorf("trigger time %v, want %v", got, want)
	}
}
