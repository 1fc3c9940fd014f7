package watch

import (
	"context"

	"github.com/nfrouter/nfrouter/model"
)

// Backend programs one part of the node (firewall, service proxy, router) from
// the model. Backends never see informers; they get immutable snapshots.
type Backend interface {
	// Name identifies the backend in logs, metrics and health.
	Name() string
	// Kinds says which kinds of change the backend reads. It is woken only for
	// those, and its changes list only those: a service proxy never hears of a
	// pod relabel.
	Kinds() model.Kinds
	// Sync makes the kernel match state. changes lists the keys that changed
	// since the previous call; changes.Full asks the backend to ignore them,
	// read back its own kernel objects and repair any drift. Runner sets Full on
	// the first call, on the periodic check and on every call after a failure.
	// Calling Sync twice with the same state must do nothing the second time.
	Sync(ctx context.Context, state *model.State, changes *model.Changes) error
}
