package ipvs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cloudflare/ipvs"

	"github.com/nfrouter/nfrouter/model"
)

// Schedulers nfrouter accepts in kube-router.io/service.scheduler.
var Schedulers = []string{"rr", "wrr", "lc", "dh", "sh", "mh"}

// DefaultScheduler is used when the annotation is absent.
const DefaultScheduler = "rr"

// kube-router.io/service.schedflags values; they set the scheduler options of
// sh and mh: flag-1 is fallback (pick another server when the hashed one is
// unavailable), flag-2 port (hash the source port too), flag-3 is unused by
// both today but passed through as kube-router does.
var schedFlagValues = map[string]ipvs.Flags{
	"flag-1": ipvs.ServiceSchedulerOpt1,
	"flag-2": ipvs.ServiceSchedulerOpt2,
	"flag-3": ipvs.ServiceSchedulerOpt3,
}

// schedConfig is the validated form of a service's scheduler annotations.
type schedConfig struct {
	Scheduler string
	Flags     ipvs.Flags // scheduler options only
}

var defaultSched = schedConfig{Scheduler: DefaultScheduler}

// InvalidAnnotationError says why a service's annotations were rejected.
type InvalidAnnotationError struct {
	Annotation, Value, Reason string
}

func (e *InvalidAnnotationError) Error() string {
	return fmt.Sprintf("annotation %s=%q: %s", e.Annotation, e.Value, e.Reason)
}

// parseSched validates the scheduler annotations of a service port.
func parseSched(o model.ProxyOptions) (schedConfig, error) {
	sc := schedConfig{Scheduler: strings.ToLower(o.Scheduler)}
	if sc.Scheduler == "" {
		sc.Scheduler = DefaultScheduler
	}
	if !slices.Contains(Schedulers, sc.Scheduler) {
		return schedConfig{}, &InvalidAnnotationError{model.AnnotationScheduler, o.Scheduler,
			"unknown scheduler, want one of " + strings.Join(Schedulers, ", ")}
	}
	if o.SchedFlags == "" {
		return sc, nil
	}
	if sc.Scheduler != "sh" && sc.Scheduler != "mh" {
		return schedConfig{}, &InvalidAnnotationError{model.AnnotationSchedFlags, o.SchedFlags,
			"scheduler flags apply only to the sh and mh schedulers, not " + sc.Scheduler}
	}
	for f := range strings.SplitSeq(o.SchedFlags, ",") {
		v, ok := schedFlagValues[strings.TrimSpace(f)]
		if !ok {
			return schedConfig{}, &InvalidAnnotationError{model.AnnotationSchedFlags, o.SchedFlags,
				fmt.Sprintf("unknown flag %q, want a comma-separated list of flag-1, flag-2, flag-3", strings.TrimSpace(f))}
		}
		sc.Flags |= v
	}
	return sc, nil
}

// schedFlagNames prints scheduler option flags as the annotation names them.
func schedFlagNames(f ipvs.Flags) string {
	var names []string
	for _, n := range []string{"flag-1", "flag-2", "flag-3"} {
		if f&schedFlagValues[n] != 0 {
			names = append(names, n)
			f &^= schedFlagValues[n]
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(f)))
	}
	return strings.Join(names, ",")
}
