package ipvs

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
)

// Planner keeps the desired virtual services and updates them from the
// changed keys of each sync. It touches no kernel state.
type Planner struct {
	cfg PlanConfig

	// services are the desired virtual services by key.
	services map[VSKey]*VirtualService
	// byPort lists the keys each service port owns.
	byPort map[model.ServicePortKey][]VSKey
	// contenders are service ports that want a key another one owns; they
	// are re-planned when the owner lets it go.
	contenders map[VSKey]map[model.ServicePortKey]struct{}
	// sched is the last valid scheduler configuration of each service port,
	// kept while its annotations are invalid.
	sched map[model.ServicePortKey]schedConfig
	// problems are the current problems of each service port, as reported.
	problems map[model.ServicePortKey]string
	// vipRefs counts the desired virtual services per dummy address.
	vipRefs map[netip.Addr]int
}

// Result is what one Update changed.
type Result struct {
	// Changed are the virtual services whose desired state changed: added,
	// removed (Planner.Service returns nil) or modified. Sorted.
	Changed []VSKey
	// VIPsAdded and VIPsRemoved are the dummy addresses that became needed
	// or unneeded.
	VIPsAdded, VIPsRemoved []netip.Addr
	// Problems are service ports whose problem changed: a new invalid
	// annotation or address conflict, or one that went away (Message "").
	Problems []Problem
}

// Problem is an invalid annotation or a conflict of one service port.
type Problem struct {
	Port    model.ServicePortKey
	Reason  string // Event reason: InvalidAnnotation, AddressConflict
	Message string // "" when the problem is resolved
}

// NewPlanner returns a planner with nothing desired.
func NewPlanner(cfg PlanConfig) *Planner {
	return &Planner{
		cfg:        cfg,
		services:   map[VSKey]*VirtualService{},
		byPort:     map[model.ServicePortKey][]VSKey{},
		contenders: map[VSKey]map[model.ServicePortKey]struct{}{},
		sched:      map[model.ServicePortKey]schedConfig{},
		problems:   map[model.ServicePortKey]string{},
		vipRefs:    map[netip.Addr]int{},
	}
}

// Update re-plans the service ports that changes names (every one with
// changes.Full, and every NodePort when this node changed) against state.
func (p *Planner) Update(state *model.State, changes *model.Changes) *Result {
	keys := affectedPorts(state, changes, p.cfg.NodeName, p.byPort)
	u := updater{p: p, state: state, res: &Result{}, changed: map[VSKey]bool{}, vips: map[netip.Addr]int{}}
	for len(keys) > 0 {
		k := keys[0]
		keys = keys[1:]
		keys = append(keys, u.replan(k)...)
	}
	u.finish()
	return u.res
}

// affectedPorts lists, sorted, the service ports to plan again: on a full
// sync (changes nil or Full) every one in state or in planned (what was
// planned before); otherwise the changed ones and, when this node changed,
// every one: NodePorts' addresses are the node's, and its zone decides
// which endpoints topology-aware routing picks. A port that went is among
// the changed ones.
func affectedPorts[V any](state *model.State, changes *model.Changes, nodeName string, planned map[model.ServicePortKey]V) []model.ServicePortKey {
	set := map[model.ServicePortKey]struct{}{}
	if changes == nil || changes.Full {
		for k := range state.ServicePorts.All() {
			set[k] = struct{}{}
		}
		for k := range planned {
			set[k] = struct{}{}
		}
	} else {
		maps.Copy(set, changes.ServicePorts)
		maps.Copy(set, changes.Endpoints)
		if changes.Nodes.Has(nodeName) {
			for k := range state.ServicePorts.All() {
				set[k] = struct{}{}
			}
		}
	}
	return slices.SortedFunc(maps.Keys(set), model.ServicePortKey.Compare)
}

// Service returns the desired virtual service at k, or nil.
func (p *Planner) Service(k VSKey) *VirtualService { return p.services[k] }

// Services returns every desired virtual service, sorted by key.
func (p *Planner) Services() []*VirtualService {
	out := slices.Collect(maps.Values(p.services))
	slices.SortFunc(out, func(a, b *VirtualService) int { return a.VSKey.Compare(b.VSKey) })
	return out
}

// VIPs returns the addresses that belong on the dummy interface, sorted.
func (p *Planner) VIPs() []netip.Addr {
	return slices.SortedFunc(maps.Keys(p.vipRefs), netip.Addr.Compare)
}

// InvalidPorts is the number of service ports with a current problem.
func (p *Planner) InvalidPorts() int { return len(p.problems) }

// updater carries one Update.
type updater struct {
	p       *Planner
	state   *model.State
	res     *Result
	changed map[VSKey]bool
	vips    map[netip.Addr]int // net reference change per address
}

// replan plans service port k again and returns the contenders to re-plan
// because k let go of a key they want.
func (u *updater) replan(k model.ServicePortKey) []model.ServicePortKey {
	p := u.p
	sp := u.state.ServicePorts.Get(k)
	sc, problem := u.schedFor(k, sp)
	planned := planServicePort(sp, u.state.Endpoints.Get(k), u.state.Nodes.Get(p.cfg.NodeName), p.cfg, sc)

	var wakeup []model.ServicePortKey
	want := make(map[VSKey]bool, len(planned))
	var owned []VSKey
	for i := range planned {
		vs := &planned[i]
		want[vs.VSKey] = true
		if owner, taken := p.owner(vs.VSKey); taken && owner != k {
			if p.contenders[vs.VSKey] == nil {
				p.contenders[vs.VSKey] = map[model.ServicePortKey]struct{}{}
			}
			p.contenders[vs.VSKey][k] = struct{}{}
			if problem == "" {
				problem = fmt.Sprintf("%s is already used by service port %s", vs.VSKey, owner)
			}
			continue
		}
		owned = append(owned, vs.VSKey)
		u.set(vs)
	}
	for _, old := range p.byPort[k] {
		if want[old] && p.services[old].Owner == k {
			continue
		}
		u.unset(old)
		for c := range p.contenders[old] {
			wakeup = append(wakeup, c)
		}
		delete(p.contenders, old)
	}
	if len(owned) == 0 {
		delete(p.byPort, k)
	} else {
		p.byPort[k] = owned
	}
	u.setProblem(k, sp, problem)
	slices.SortFunc(wakeup, model.ServicePortKey.Compare)
	return wakeup
}

func (p *Planner) owner(k VSKey) (model.ServicePortKey, bool) {
	if vs := p.services[k]; vs != nil {
		return vs.Owner, true
	}
	return model.ServicePortKey{}, false
}

// schedFor validates the annotations of sp; invalid ones keep the last valid
// configuration (or the default) and yield a problem message.
func (u *updater) schedFor(k model.ServicePortKey, sp *model.ServicePort) (schedConfig, string) {
	p := u.p
	if sp == nil {
		delete(p.sched, k)
		return defaultSched, ""
	}
	sc, err := parseSched(sp.Options)
	if err != nil {
		prev, ok := p.sched[k]
		if !ok {
			prev = defaultSched
		}
		return prev, err.Error()
	}
	p.sched[k] = sc
	return sc, ""
}

func (u *updater) setProblem(k model.ServicePortKey, sp *model.ServicePort, msg string) {
	p := u.p
	if sp == nil {
		msg = ""
	}
	if p.problems[k] == msg {
		return
	}
	reason := "InvalidAnnotation"
	if msg == "" {
		delete(p.problems, k)
	} else {
		p.problems[k] = msg
		if _, err := parseSched(sp.Options); err == nil {
			reason = "AddressConflict"
		}
	}
	u.res.Problems = append(u.res.Problems, Problem{Port: k, Reason: reason, Message: msg})
}

func (u *updater) set(vs *VirtualService) {
	old := u.p.services[vs.VSKey]
	if old.Equal(vs) {
		return
	}
	if old != nil && old.Kind.OnDummy() {
		u.vips[old.Addr]--
	}
	if vs.Kind.OnDummy() {
		u.vips[vs.Addr]++
	}
	cp := *vs
	u.p.services[vs.VSKey] = &cp
	u.changed[vs.VSKey] = true
}

func (u *updater) unset(k VSKey) {
	old := u.p.services[k]
	if old == nil {
		return
	}
	if old.Kind.OnDummy() {
		u.vips[old.Addr]--
	}
	delete(u.p.services, k)
	u.changed[k] = true
}

// finish applies the address reference changes and sorts the result.
func (u *updater) finish() {
	p := u.p
	for a, d := range u.vips {
		if d == 0 {
			continue
		}
		before := p.vipRefs[a]
		after := before + d
		if after <= 0 {
			delete(p.vipRefs, a)
		} else {
			p.vipRefs[a] = after
		}
		switch {
		case before == 0 && after > 0:
			u.res.VIPsAdded = append(u.res.VIPsAdded, a)
		case before > 0 && after <= 0:
			u.res.VIPsRemoved = append(u.res.VIPsRemoved, a)
		}
	}
	slices.SortFunc(u.res.VIPsAdded, netip.Addr.Compare)
	slices.SortFunc(u.res.VIPsRemoved, netip.Addr.Compare)
	u.res.Changed = slices.SortedFunc(maps.Keys(u.changed), VSKey.Compare)
}
