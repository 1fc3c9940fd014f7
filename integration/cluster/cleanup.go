package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Cleanups is a stack of undo steps, run in reverse order by Close: each thing
// a test bed (this one, the node tier's) makes registers its undo right after
// it was made, so a start that fails half-way undoes exactly what it did.
type Cleanups struct {
	// mu protects fns.
	mu  sync.Mutex
	fns []cleanup
	// once makes Close run the steps once.
	once sync.Once
}

type cleanup struct {
	what string
	fn   func() error
}

// Add registers the undo step fn, named what in failures.
func (c *Cleanups) Add(what string, fn func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, cleanup{what, fn})
}

// Close runs the steps as Run does, once: a caller that comes later, or
// meanwhile, waits until the first run has finished and gets nil.
func (c *Cleanups) Close(log *slog.Logger) error {
	var err error
	c.once.Do(func() { err = c.Run(log) })
	return err
}

// Run undoes everything registered so far, newest first, and reports every
// failure; it may be called more than once.
func (c *Cleanups) Run(log *slog.Logger) error {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		if err := fns[i].fn(); err != nil {
			log.Warn("Cleanup failed", "what", fns[i].what, "error", err)
			errs = append(errs, fmt.Errorf("%s: %w", fns[i].what, err))
		}
	}
	return errors.Join(errs...)
}
