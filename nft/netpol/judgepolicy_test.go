package netpol

import (
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/netpol/netpoltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestPolicyAllowsComposesToJudge checks PolicyAllows, one policy at a
// time, against the table's verdict on every probe of the e2e truth tables:
// a connection is allowed exactly when, on each side that some selecting
// policy isolates, one of those policies allows it. That is what `nfrouter
// explain` prints policy by policy beside the verdict.
func TestPolicyAllowsComposesToJudge(t *testing.T) {
	for _, tc := range netpoltest.E2ECases {
		t.Run(tc.Name, func(t *testing.T) {
			st := fixture.New()
			for _, ns := range netpoltest.Namespaces {
				st.Namespaces = st.Namespaces.With(ns, netpoltest.Namespace(ns))
			}
			for _, p := range netpoltest.Pods() {
				mp := netpoltest.Pod(p, "node-a")
				st.Pods = st.Pods.With(mp.Key(), mp)
			}
			if err := st.Apply([]byte(tc.Policies)); err != nil {
				t.Fatal(err)
			}
			tab, _ := plan(st.State, Config{NodeName: "node-a"})
			for _, from := range netpoltest.Pods() {
				for _, to := range netpoltest.Pods() {
					for _, pp := range netpoltest.ProbePorts {
						pkt := ruleset.Packet{Src: netpoltest.PodIPs(from)[0], Dst: netpoltest.PodIPs(to)[0],
							Proto: uint8(pp.Protocol()), DPort: uint16(pp.Port)}
						v, err := Judge(tab, pkt)
						if err != nil {
							t.Fatal(err)
						}
						out := sideAllows(t, tab, st.State, st.Pods.Get(podKey(from)), false, pkt)
						in := sideAllows(t, tab, st.State, st.Pods.Get(podKey(to)), true, pkt)
						if v.Allowed != (out && in) || v.Allowed != tc.Want(from, to, pp.Proto, pp.Port) {
							t.Errorf("%s -> %s %s/%d: judged %v, policies allow egress %v and ingress %v, want %v",
								from, to, pp.Proto, pp.Port, v.Allowed, out, in, tc.Want(from, to, pp.Proto, pp.Port))
						}
					}
				}
			}
		})
	}
}

// sideAllows says whether the policies isolating pod in one direction let
// pkt through: true when none isolates it, else when one of them allows.
func sideAllows(t *testing.T, tab *ruleset.Table, st *model.State, pod *model.Pod, isIngress bool, pkt ruleset.Packet) bool {
	t.Helper()
	isolated := false
	for k, pol := range st.Policies.All() {
		if !pol.Selects(pod) || (isIngress && !pol.Ingress) || (!isIngress && !pol.Egress) {
			continue
		}
		isolated = true
		ok, _, err := PolicyAllows(tab, k, isIngress, pkt)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return true
		}
	}
	return !isolated
}

func podKey(p string) model.PodKey {
	return model.PodKey{Namespace: netpoltest.NS(p), Name: p[len(netpoltest.NS(p))+1:]}
}
