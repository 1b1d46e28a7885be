package registry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/utils/clock"
)

// Cache shares tag listings. Callers with the same key (a repository and the credentials used to
// read it) get one listing per interval between them. After a failure the next listing waits for an
// exponential backoff, or for the registry's Retry-After when that is longer; meanwhile callers get
// the last good tags with the error.
type Cache struct {
	Lister     TagLister
	Clock      clock.PassiveClock
	MinBackoff time.Duration // first wait after a failure; default 30s
	MaxBackoff time.Duration // longest wait; default 30m

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	mu       sync.Mutex // one listing at a time per key
	tags     []string
	fetched  time.Time
	err      error
	failures int
	retryAt  time.Time
}

// maxRetryAfter caps a registry's Retry-After, so a wrong header cannot silence a source for good.
const maxRetryAfter = 24 * time.Hour

// Result of a lookup.
type Result struct {
	// Tags are the newest tags known; after a failure, those of the last good listing (or none).
	Tags []string
	// Err is the failure of the last listing, if it failed.
	Err error
	// Next is when a new listing will be made.
	Next time.Time
}

// Tags returns the tags of repository for key, listing them when the last listing is older than
// interval and no backoff is running.
func (c *Cache) Tags(ctx context.Context, key, repository string, interval time.Duration, keychain authn.Keychain) Result {
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.Clock.Now()
	switch {
	case e.err == nil && !e.fetched.IsZero() && now.Before(e.fetched.Add(interval)):
		return Result{Tags: e.tags, Next: e.fetched.Add(interval)}
	case e.err != nil && now.Before(e.retryAt):
		return Result{Tags: e.tags, Err: e.err, Next: e.retryAt}
	}
	tags, err := c.Lister.ListTags(ctx, repository, keychain)
	if err != nil {
		e.failures++
		e.err = err
		e.retryAt = now.Add(c.backoff(e.failures, err))
		return Result{Tags: e.tags, Err: err, Next: e.retryAt}
	}
	e.tags, e.fetched, e.err, e.failures = tags, now, nil, 0
	return Result{Tags: tags, Next: now.Add(interval)}
}

func (c *Cache) entry(key string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*entry{}
	}
	e, ok := c.entries[key]
	if !ok {
		e = &entry{}
		c.entries[key] = e
	}
	return e
}

// backoff doubles from MinBackoff up to MaxBackoff with each failure in a row; a longer
// Retry-After wins.
func (c *Cache) backoff(failures int, err error) time.Duration {
	lo, hi := c.MinBackoff, c.MaxBackoff
	if lo <= 0 {
		lo = 30 * time.Second
	}
	if hi <= 0 {
		hi = 30 * time.Minute
	}
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	var re *Error
	if errors.As(err, &re) && re.RetryAfter > d {
		d = min(re.RetryAfter, maxRetryAfter)
	}
	return d
}
