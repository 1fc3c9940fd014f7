package main

import "testing"

func TestScaledMemLimit(t *testing.T) {
	for _, tc := range []struct {
		deploy    string
		endpoints int
		want      string
	}{
		{"120MiB", 10_000, "120MiB"},
		{"120MiB", 100_000, "120MiB"},
		{"120MiB", 500_000, "600MiB"},
		{"120MiB", 100_001, "121MiB"},
		{"1GiB", 500_000, "1GiB"},
	} {
		if got := scaledMemLimit(tc.deploy, tc.endpoints); got != tc.want {
			t.Errorf("scaledMemLimit(%q, %d) = %q, want %q", tc.deploy, tc.endpoints, got, tc.want)
		}
	}
}
