package model

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSelector(t *testing.T) {
	sel, err := SelectorFromAPI(&metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "a"}},
			{Key: "debug", Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}},
			{Key: "team", Operator: metav1.LabelSelectorOpExists},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sel.String(), "app=web,!debug,env notin (prod),team,tier in (a,b)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"app": "web", "tier": "a", "team": "x"}, true},
		{map[string]string{"app": "web", "tier": "c", "team": "x"}, false},
		{map[string]string{"app": "web", "tier": "a"}, false},
		{map[string]string{"app": "web", "tier": "a", "team": "x", "debug": ""}, false},
		{map[string]string{"app": "web", "tier": "a", "team": "x", "env": "prod"}, false},
		{map[string]string{"app": "web", "tier": "a", "team": "x", "env": "dev"}, true},
	} {
		if got := sel.Matches(tc.labels); got != tc.want {
			t.Errorf("Matches(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
	empty, _ := SelectorFromAPI(&metav1.LabelSelector{})
	if !empty.Matches(nil) || !empty.Empty() {
		t.Error("empty selector must match everything")
	}
	if nilSel, _ := SelectorFromAPI(nil); nilSel != nil {
		t.Error("nil selector must stay nil (not given)")
	}
	if _, err := SelectorFromAPI(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}); err == nil {
		t.Error("unknown operator accepted")
	}
}

func TestPolicyFromAPI(t *testing.T) {
	tcp, udp, sctp := corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "np"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
					{NamespaceSelector: &metav1.LabelSelector{}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1/8", Except: []string{"10.1.0.0/16"}}},
				},
				Ports: []networkingv1.NetworkPolicyPort{
					{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(5432))},
					{Protocol: &udp, Port: ptr.To(intstr.FromInt32(3000)), EndPort: ptr.To[int32](3100)},
					{Port: ptr.To(intstr.FromString("metrics"))},
					{Protocol: &sctp},
				},
			}},
		},
	}
	p := PolicyFromAPI(np)
	if p.Err != "" {
		t.Fatal(p.Err)
	}
	if !p.Ingress || p.Egress {
		t.Errorf("policyTypes default: ingress=%v egress=%v, want true false", p.Ingress, p.Egress)
	}
	r := p.IngressRules[0]
	if r.Peers[0].PodSelector.String() != "app=web" || r.Peers[0].NamespaceSelector != nil {
		t.Errorf("pod peer = %+v", r.Peers[0])
	}
	if r.Peers[1].PodSelector != nil || !r.Peers[1].NamespaceSelector.Empty() {
		t.Errorf("namespace peer = %+v", r.Peers[1])
	}
	if b := r.Peers[2].IPBlock; b.CIDR != netip.MustParsePrefix("10.0.0.0/8") || len(b.Except) != 1 {
		t.Errorf("ipBlock = %+v", b)
	}
	wantPorts := []PolicyPort{{Protocol: TCP, Port: 5432}, {Protocol: UDP, Port: 3000, EndPort: 3100}, {Protocol: TCP, Name: "metrics"}, {Protocol: SCTP}}
	for i, w := range wantPorts {
		if r.Ports[i] != w {
			t.Errorf("port %d = %+v, want %+v", i, r.Ports[i], w)
		}
	}

	egressOnly := np.DeepCopy()
	egressOnly.Spec.Ingress = nil
	egressOnly.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	if p := PolicyFromAPI(egressOnly); !p.Ingress || !p.Egress {
		t.Errorf("defaulted policyTypes with egress rules: ingress=%v egress=%v, want both", p.Ingress, p.Egress)
	}
	egressOnly.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	if p := PolicyFromAPI(egressOnly); p.Ingress || !p.Egress || len(p.EgressRules) != 1 {
		t.Errorf("explicit Egress: %+v", p)
	}
}

func TestPolicyFromAPIFailsClosed(t *testing.T) {
	for name, mutate := range map[string]func(*networkingv1.NetworkPolicy){
		"invalid CIDR": func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From[0].IPBlock.CIDR = "10.0.0.0/33"
		},
		"except outside CIDR": func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From[0].IPBlock.Except = []string{"192.168.0.0/24"}
		},
		"endPort below port": func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(90)), EndPort: ptr.To[int32](80)}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			np := &networkingv1.NetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "np"},
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
					Ingress: []networkingv1.NetworkPolicyIngressRule{{
						From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}},
					}},
				},
			}
			mutate(np)
			p := PolicyFromAPI(np)
			if p.Err == "" || !strings.Contains(p.Err, "ingress[0]") {
				t.Fatalf("Err = %q, want an error naming ingress[0]", p.Err)
			}
			if len(p.IngressRules) != 0 || !p.Ingress || p.PodSelector.String() != "app=db" {
				t.Errorf("a failed policy must isolate its targets and allow nothing: %+v", p)
			}
		})
	}
}
