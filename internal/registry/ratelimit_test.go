package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Listings to one host are paced by its token bucket, and another host is not held up by them. With
// the busy host's bucket spent, a listing would wait two seconds for a token at one request every
// two seconds, longer than its one-second deadline, so it fails at once without reaching the
// registry.
func TestRequestsToOneHostArePaced(t *testing.T) {
	registry := func(requests *atomic.Int32) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if strings.HasSuffix(r.URL.Path, "/tags/list") {
				_, _ = w.Write([]byte(`{"name":"demo/app","tags":["1.0.0"]}`))
			}
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	var busy, quiet atomic.Int32
	busyHost, quietHost := registry(&busy), registry(&quiet)
	limits := &HostLimits{PerSecond: 0.5, Burst: 10}
	limits.limiter(busyHost).ReserveN(time.Now(), 10) // the burst, spent by earlier listings
	r := loopback(t)
	r.Limits, r.Timeout = limits, time.Second
	list := func(host string) error {
		_, err := r.ListTags(context.Background(), host+"/demo/app", authn.DefaultKeychain)
		return err
	}
	if err := list(busyHost); err == nil || busy.Load() != 0 {
		t.Errorf("a listing went out past the host's rate: %v, %d requests", err, busy.Load())
	}
	if err := list(quietHost); err != nil || quiet.Load() == 0 {
		t.Errorf("another host was held up: %v, %d requests", err, quiet.Load())
	}
}
