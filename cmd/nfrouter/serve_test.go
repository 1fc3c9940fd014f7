package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestMetricsHaveBuildInfoAndPprofOnlyWhenAsked(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newBuildInfo())
	want := `nfrouter_build_info{goversion="` + runtime.Version() + `",version="` + version + `"} 1`
	for _, pprofToo := range []bool{false, true} {
		h := metricsHandler("/metrics", reg, pprofToo)
		code, body := get(t, h, "/metrics")
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("pprof %v: /metrics %d, want %s in:\n%s", pprofToo, code, want, body)
		}
		code, body = get(t, h, "/debug/pprof/")
		if served := code == http.StatusOK && strings.Contains(body, "goroutine"); served != pprofToo {
			t.Errorf("pprof %v: /debug/pprof/ answered %d", pprofToo, code)
		}
	}
}
