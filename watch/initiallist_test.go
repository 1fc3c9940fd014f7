package watch

import (
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

type allOn struct{}

func (allOn) Enabled(clientfeatures.Feature) bool { return true }

func TestInitialStateIsListedUnlessTheUserChose(t *testing.T) {
	gates := initialStateGates(allOn{}, false)
	if gates.Enabled(clientfeatures.WatchListClient) {
		t.Error("WatchListClient on although the user did not set " + watchListEnv)
	}
	if !gates.Enabled(clientfeatures.InformerResourceVersion) {
		t.Error("other client-go features must keep their setting")
	}
	if !initialStateGates(allOn{}, true).Enabled(clientfeatures.WatchListClient) {
		t.Error("the user's " + watchListEnv + " must win")
	}
}
