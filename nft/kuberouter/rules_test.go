package kuberouter

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

func setMatch(index uint16) *expr.Match {
	info := xt.Unknown(binary.NativeEndian.AppendUint16(nil, index))
	info = append(info, 1, 1) // dim, flags
	return &expr.Match{Name: "set", Rev: 4, Info: &info}
}

func TestKubeRouterRule(t *testing.T) {
	sets := map[uint16]string{0: "kube-router-pod-subnets", 1: "foreign", 2: "inet6:KUBE-DST-ABC"}
	nameOf := func(i uint16) (string, error) {
		if n, ok := sets[i]; ok {
			return n, nil
		}
		return "", errors.New("no such set")
	}
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	for _, tc := range []struct {
		name         string
		table, chain string
		exprs        []expr.Any
		want         string
	}{
		{"jump to a kube-router chain", "filter", "FORWARD", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: "KUBE-ROUTER-FORWARD"}}, "jumps to KUBE-ROUTER-FORWARD"},
		{"goto a policy chain", "filter", "INPUT", []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: "KUBE-NWPLCY-X"}}, "jumps to KUBE-NWPLCY-X"},
		{"jump elsewhere", "filter", "FORWARD", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: "KUBE-FORWARD"}}, ""},
		{"kube-router set", "nat", "POSTROUTING", []expr.Any{setMatch(0), accept}, "matches ipset kube-router-pod-subnets"},
		{"kube-router IPv6 set", "filter", "INPUT", []expr.Any{setMatch(2), accept}, "matches ipset inet6:KUBE-DST-ABC"},
		{"foreign set", "filter", "FORWARD", []expr.Any{setMatch(1), accept}, ""},
		{"IPVS masquerade in POSTROUTING", "nat", "POSTROUTING", []expr.Any{&expr.Match{Name: "ipvs", Info: &xt.Unknown{}}, accept}, "masquerades IPVS connections (kube-router's -m ipvs rule)"},
		{"ipvs match elsewhere", "filter", "INPUT", []expr.Any{&expr.Match{Name: "ipvs", Info: &xt.Unknown{}}, accept}, ""},
		{"plain accept", "filter", "INPUT", []expr.Any{accept}, ""},
	} {
		got, err := kubeRouterRule(tc.table, tc.chain, &nftables.Rule{Exprs: tc.exprs}, nameOf)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := kubeRouterRule("filter", "INPUT", &nftables.Rule{Exprs: []expr.Any{setMatch(9)}}, nameOf); err == nil {
		t.Error("a set index that cannot be resolved is not an error")
	}
	for name, want := range map[string]bool{"kube-router-svip": true, "KUBE-SRC-X": true, "inet6:kube-router-node-ips": true,
		"inet6:foreign": false, "KUBE-ROUTER-SERVICES": false, "kube-proxy-x": false} {
		if isKubeRouterSet(name) != want {
			t.Errorf("isKubeRouterSet(%q) = %v", name, !want)
		}
	}
}
