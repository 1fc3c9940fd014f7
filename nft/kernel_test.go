package nft

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
)

func loadCase(t testing.TB, name string) fixture.State {
	t.Helper()
	s, err := fixture.Load("netpol/testdata/pods.inc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := fixture.Load(filepath.Join("netpol/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.Policies.All() {
		s.Policies = s.Policies.With(k, v)
	}
	for k, v := range c.Nodes.All() {
		s.Nodes = s.Nodes.With(k, v)
	}
	return s
}

func cases(t testing.TB) []string {
	files, _ := filepath.Glob("netpol/testdata/*.yaml")
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".inc.yaml") {
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

// TestKernelProgramsWhatDryRunPrints programs every planner test case into a
// fresh namespace and checks that the kernel lists what the dry-run renderer
// prints, that the listing parses again with nft -c, and that a full resync
// then finds nothing to repair.
func TestKernelProgramsWhatDryRunPrints(t *testing.T) {
	kerneltest.RequireRoot(t)
	for _, name := range cases(t) {
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			st := loadCase(t, name)
			ns := kerneltest.NewNetNS(t)
			dd := strings.HasPrefix(name, "default-deny")
			f := newFirewallIn(t, ns, dd)
			syncOK(t, f, st.State, &model.Changes{Full: true})
			if s := syncOK(t, f, st.State, &model.Changes{Full: true}); s.Messages != 0 {
				t.Errorf("full resync of an unchanged table sent %d messages (%v), want 0", s.Messages, s.ByType)
			}
			if s := syncOK(t, f, st.State, &model.Changes{}); s.Messages != 0 {
				t.Errorf("empty incremental sync sent %d messages, want 0", s.Messages)
			}
			want := renderFirewall(t, st.State, FirewallConfig{NodeName: "node-a", DefaultDeny: dd})
			listed := nftIn(t, ns, "", "list", "ruleset")
			if normalize(listed) != normalize(want) {
				t.Errorf("kernel listing differs from dry run:\n--- nft list ruleset\n%s\n--- dry run\n%s", listed, want)
			}
			nftIn(t, kerneltest.NewNetNS(t), listed, "-c", "-f", "-")
		})
	}
}

// TestKernelDriftRepair damages the programmed table by hand (through
// netlink) and checks that the next full sync restores it, while a table of
// someone else survives every sync.
func TestKernelDriftRepair(t *testing.T) {
	kerneltest.RequireRoot(t)
	st := loadCase(t, "ports.yaml")
	ns := kerneltest.NewNetNS(t)
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	other := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "other"})
	oc := c.AddChain(&nftables.Chain{Table: other, Name: "keep"})
	c.AddRule(&nftables.Rule{Table: other, Chain: oc, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	f := newFirewallIn(t, ns, false)
	syncOK(t, f, st.State, &model.Changes{Full: true})
	want := renderFirewall(t, st.State, FirewallConfig{NodeName: "node-a"})

	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: "nfrouter"}
	damage := map[string]func() error{
		"delete a rule": func() error {
			rules, err := c.GetRules(tbl, &nftables.Chain{Table: tbl, Name: "np-in/default/ports"})
			if err != nil || len(rules) < 2 {
				t.Fatalf("rules: %v (%d)", err, len(rules))
			}
			return c.DelRule(rules[1])
		},
		"delete an element": func() error {
			s, err := c.GetSetByName(tbl, "isolated-in-v4")
			if err != nil {
				t.Fatal(err)
			}
			els, err := c.GetSetElements(s)
			if err != nil || len(els) == 0 {
				t.Fatalf("elements: %v (%d)", err, len(els))
			}
			return c.SetDeleteElements(s, els[:1])
		},
		"delete a chain's rules": func() error {
			c.FlushChain(&nftables.Chain{Table: tbl, Name: "pod-ingress"})
			return nil
		},
		"delete the table": func() error { c.DelTable(tbl); return nil },
	}
	for _, what := range []string{"delete a rule", "delete an element", "delete a chain's rules", "delete the table"} {
		t.Run(what, func(t *testing.T) {
			if err := damage[what](); err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			if s := syncOK(t, f, st.State, &model.Changes{Full: true}); s.Messages == 0 {
				t.Errorf("full sync after %s sent nothing", what)
			}
			if s := syncOK(t, f, st.State, &model.Changes{Full: true}); s.Messages != 0 {
				t.Errorf("second full sync after %s sent %d messages (%v), want 0", what, s.Messages, s.ByType)
			}
			listed := nftIn(t, ns, "", "list", "table", "inet", "nfrouter")
			if normalize(listed) != normalize(want) {
				t.Errorf("after %s and a full sync, kernel lists:\n%s\nwant:\n%s", what, listed, want)
			}
		})
	}
	if tables, _ := c.ListTablesOfFamily(nftables.TableFamilyIPv4); len(tables) != 1 || tables[0].Name != "other" {
		t.Errorf("other table did not survive: %v", tables)
	}
}
