package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// BenchmarkListingsOf5000ConfigsOver50Repositories: 5,000 configs, whose images spread over 50
// repositories of one registry, each ask for their tags once an interval, as the engine does. The
// registry is go-containerregistry's, over HTTP on 127.0.0.1. It reports the registry's requests
// per interval: one listing per repository, whatever the number of configs.
func BenchmarkListingsOf5000ConfigsOver50Repositories(b *testing.B) {
	const configs, repositories = 5000, 50
	var requests atomic.Int64
	reg := registrytest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repository := func(i int) string { return fmt.Sprintf("%s/team/app%02d", host, i%repositories) }
	for i := range repositories {
		registrytest.Push(b, host, strings.TrimPrefix(repository(i), host+"/"), "1.0.0", "1.1.0", "1.2.0")
	}
	policy, err := ParseAllowList([]string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	cache := &Cache{Lister: Remote{Transport: policy.Transport()}, Clock: clk}
	ctx := context.Background()
	requests.Store(0)
	intervals := 0
	for b.Loop() {
		for i := range configs {
			if r := cache.Tags(ctx, repository(i), repository(i), time.Hour, authn.DefaultKeychain); r.Err != nil || len(r.Tags) != 3 {
				b.Fatalf("config %d: %v, tags %v", i, r.Err, r.Tags)
			}
		}
		clk.SetTime(clk.Now().Add(time.Hour))
		intervals++
	}
	b.ReportMetric(float64(requests.Load())/float64(intervals), "requests/interval")
	b.ReportMetric(configs, "configs")
	b.ReportMetric(repositories, "repositories")
}
