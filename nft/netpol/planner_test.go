package netpol

import (
	"flag"
	"github.com/nfrouter/nfrouter/integration/golden"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func load(t *testing.T, name string) fixture.State {
	t.Helper()
	s, err := fixture.Load("testdata/pods.inc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(b); err != nil {
		t.Fatal(err)
	}
	return s
}

func plan(st *model.State, cfg Config) (*ruleset.Table, *Planner) {
	tab := ruleset.NewTable(Family, Table)
	p := New(tab, cfg)
	p.Update(st, &model.Changes{Full: true})
	return tab, p
}

// TestGolden plans each testdata/*.yaml (on top of pods.inc.yaml) for node-a and
// compares the nft text with testdata/*.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".inc.yaml") {
			continue
		}
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			st := load(t, name)
			cfg := Config{NodeName: "node-a", DefaultDeny: strings.HasPrefix(name, "default-deny")}
			tab, _ := plan(st.State, cfg)
			got := ruleset.Text(tab)
			golden.Compare(t, strings.TrimSuffix(f, ".yaml")+".golden", got, *update)
		})
	}
}

// TestIncrementalEqualsFull walks random sequences of states built from the
// test files and checks that planning each step incrementally, from the
// changed keys only, yields exactly the table a fresh planner builds.
func TestIncrementalEqualsFull(t *testing.T) {
	var all []fixture.State
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		if !strings.HasSuffix(f, ".inc.yaml") {
			all = append(all, load(t, filepath.Base(f)))
		}
	}
	// Merge everything into one universe, then take random subsets of it.
	universe := fixture.New()
	for _, s := range all {
		universe.Add(s)
	}
	relabeled := map[model.PodKey]*model.Pod{}
	for k, p := range universe.Pods.All() {
		q := *p
		q.Labels = map[string]string{"app": "db"}
		relabeled[k] = &q
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dd := range []bool{false, true} {
		cfg := Config{NodeName: "node-a", DefaultDeny: dd}
		tab := ruleset.NewTable(Family, Table)
		p := New(tab, cfg)
		prev := fixture.New()
		p.Update(prev.State, &model.Changes{Full: true})
		for step := range 300 {
			next := prev.Clone()
			ch := &model.Changes{}
			// Toggle a few random objects.
			for range 1 + rng.IntN(3) {
				switch rng.IntN(4) {
				case 0:
					k := pick(rng, universe.Pods)
					switch {
					case next.Pods.Get(k) == nil:
						next.Pods = next.Pods.With(k, universe.Pods.Get(k))
					case rng.IntN(2) == 0 && next.Pods.Get(k) == universe.Pods.Get(k):
						next.Pods = next.Pods.With(k, relabeled[k])
					default:
						next.Pods = next.Pods.Without(k)
					}
					ch.Pods.Add(k)
				case 1:
					k := pick(rng, universe.Policies)
					if next.Policies.Get(k) == nil {
						next.Policies = next.Policies.With(k, universe.Policies.Get(k))
					} else {
						next.Policies = next.Policies.Without(k)
					}
					ch.Policies.Add(k)
				case 2:
					k := pick(rng, universe.Namespaces)
					if next.Namespaces.Get(k) == nil {
						next.Namespaces = next.Namespaces.With(k, universe.Namespaces.Get(k))
					} else {
						next.Namespaces = next.Namespaces.Without(k)
					}
					ch.Namespaces.Add(k)
				case 3:
					k := pick(rng, universe.Nodes)
					if next.Nodes.Get(k) == nil {
						next.Nodes = next.Nodes.With(k, universe.Nodes.Get(k))
					} else {
						next.Nodes = next.Nodes.Without(k)
					}
					ch.Nodes.Add(k)
				}
			}
			p.Update(next.State, ch)
			want, _ := plan(next.State, cfg)
			if got, w := ruleset.Text(tab), ruleset.Text(want); got != w {
				t.Fatalf("defaultDeny=%v step %d: incremental plan differs from full plan:\n--- incremental\n%s\n--- full\n%s", dd, step, got, w)
			}
			prev = next
		}
	}
}

func pick[K comparable, V any](rng *rand.Rand, m model.Map[K, V]) K {
	keys := make([]K, 0, m.Len())
	for k := range m.All() {
		keys = append(keys, k)
	}
	// Map order is random; sort for a reproducible pick.
	sortKeys(keys)
	return keys[rng.IntN(len(keys))]
}
