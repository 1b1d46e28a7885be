package registry

import (
	"net/http"
	"sync"

	"golang.org/x/time/rate"
)

// DefaultRequestsPerSecond is the rate at which the manager talks to one registry host when
// HostLimits leaves it unset; each host also gets a burst of as many requests.
const DefaultRequestsPerSecond = 20

// HostLimits is a token bucket per registry host, shared by every listing the manager makes: on top
// of the shared listings, it keeps thousands of configs from hammering one registry at once.
type HostLimits struct {
	// PerSecond is the requests per second to one host; 0 means DefaultRequestsPerSecond.
	PerSecond float64
	// Burst is how many requests may go at once; 0 means one second's worth (at least 1).
	Burst int

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

func (h *HostLimits) limiter(host string) *rate.Limiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.limiters == nil {
		h.limiters = map[string]*rate.Limiter{}
	}
	l, ok := h.limiters[host]
	if !ok {
		qps := h.PerSecond
		if qps <= 0 {
			qps = DefaultRequestsPerSecond
		}
		burst := h.Burst
		if burst <= 0 {
			burst = max(int(qps), 1)
		}
		l = rate.NewLimiter(rate.Limit(qps), burst)
		h.limiters[host] = l
	}
	return l
}

// rateLimited waits for the host's token before each request; a listing whose deadline comes
// first fails like any listing that ran out of time.
type rateLimited struct {
	base   http.RoundTripper
	limits *HostLimits
}

func (t rateLimited) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.limits.limiter(req.URL.Host).Wait(req.Context()); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(req)
}
