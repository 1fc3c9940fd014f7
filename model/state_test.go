package model

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// equalMap fails unless m holds exactly want's entries.
func equalMap(t *testing.T, what string, m Map[int, int], want map[int]int) {
	t.Helper()
	if m.Len() != len(want) {
		t.Fatalf("%s: Len() = %d, want %d", what, m.Len(), len(want))
	}
	if got := maps.Collect(m.All()); !maps.Equal(got, want) {
		t.Fatalf("%s: holds %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got, ok := m.Lookup(k); !ok || got != v {
			t.Fatalf("%s: Lookup(%d) = %d, %v, want %d", what, k, got, ok, v)
		}
	}
}

// TestSnapshotsOfACowMapNeverChange writes, deletes and snapshots at random
// and checks every snapshot taken still holds what it held when taken.
func TestSnapshotsOfACowMapNeverChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c cowMap[int, int]
	ref := map[int]int{}
	type taken struct {
		m    Map[int, int]
		want map[int]int
	}
	var snaps []taken
	for step := range 5000 {
		k := rng.IntN(2000)
		if rng.IntN(4) == 0 {
			c.del(k)
			delete(ref, k)
		} else {
			c.put(k, step)
			ref[k] = step
		}
		if rng.IntN(50) == 0 {
			snaps = append(snaps, taken{c.snapshot(), maps.Clone(ref)})
		}
	}
	equalMap(t, "store", c.snapshot(), ref)
	for i, s := range snaps {
		equalMap(t, fmt.Sprintf("snapshot %d", i), s.m, s.want)
	}
}

func TestWithAndWithoutLeaveTheMapAlone(t *testing.T) {
	base := MapOf(map[int]int{1: 1, 2: 2, 300: 3})
	with := base.With(4, 4).With(1, 10)
	without := base.Without(2).Without(99)
	equalMap(t, "base", base, map[int]int{1: 1, 2: 2, 300: 3})
	equalMap(t, "with", with, map[int]int{1: 10, 2: 2, 300: 3, 4: 4})
	equalMap(t, "without", without, map[int]int{1: 1, 300: 3})
	var zero Map[int, int]
	equalMap(t, "zero", zero, map[int]int{})
	equalMap(t, "zero with", zero.With(7, 7), map[int]int{7: 7})
	if zero.Has(7) || zero.Get(7) != 0 {
		t.Error("the zero Map gained an entry")
	}
}
