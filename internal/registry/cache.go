package registry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/utils/clock"
)

// Cache shares tag listings, and the digests of followed tags. Callers with the same key (a
// repository, or a tag, and the credentials used to read it) get one answer per interval between
// them. After a failure the next listing waits for an
// exponential backoff, or for the registry's Retry-After when that is longer; meanwhile callers get
// the last good tags with the error. An answer nobody asks for any more is dropped (idleRetention).
type Cache struct {
	Lister     TagLister
	Clock      clock.PassiveClock
	MinBackoff time.Duration // first wait after a failure; default 30s
	MaxBackoff time.Duration // longest wait; default 30m

	mu      sync.Mutex
	entries map[string]*entry
	swept   time.Time // the last time entries nobody asks for were dropped
}

type entry struct {
	mu sync.Mutex // one listing at a time per key
	// repository is the normalised name of what the entry answers for; stale: it was pushed to
	// since the answer (Expire).
	repository string
	stale      atomic.Bool
	tags       []string
	fetched    time.Time
	err        error
	failures   int
	retryAt    time.Time
	// keepUntil is when the entry is dropped unless asked again (Unix nanoseconds): read by the
	// sweep, which does not take mu.
	keepUntil atomic.Int64
}

// idleRetention is how long an answer nobody asks for is kept, at least (two of its intervals when
// that is longer, and a running backoff): a config deleted, or its credentials rotated (another
// key), leaves its entry behind, with up to all the tags of a repository.
const idleRetention = 24 * time.Hour

// sweepEvery is the least time between two sweeps of the entries.
const sweepEvery = time.Hour

// MinRelist is the least time between two listings of one entry that a push asks for (Expire):
// a flood of notifications does not become a flood of listings.
const MinRelist = 10 * time.Second

// maxRetryAfter caps a registry's Retry-After, so a wrong header cannot silence a source for good.
const maxRetryAfter = 24 * time.Hour

// Result of a lookup.
type Result struct {
	// Tags are the newest tags known; after a failure, those of the last good listing (or none).
	Tags []string
	// Digest is the digest the tag names, of a Digest lookup: the newest known, as Tags.
	Digest string
	// Err is the failure of the last listing, if it failed.
	Err error
	// Next is when a new listing will be made.
	Next time.Time
}

// Tags returns the tags of repository for key, listing them when the last listing is older than
// interval and no backoff is running.
func (c *Cache) Tags(ctx context.Context, key, repository string, interval time.Duration, keychain authn.Keychain) Result {
	return c.look(key, repository, interval, func() ([]string, error) { return c.Lister.ListTags(ctx, repository, keychain) })
}

// Digest returns the digest the tag image names for key, asking the registry when the last answer
// is older than interval and no backoff is running, as Tags lists. The Lister must be a
// DigestResolver.
func (c *Cache) Digest(ctx context.Context, key, image string, interval time.Duration, keychain authn.Keychain) Result {
	r := c.look(key, image, interval, func() ([]string, error) {
		resolver, ok := c.Lister.(DigestResolver)
		if !ok {
			return nil, errors.New("the registry client cannot look images up")
		}
		d, err := resolver.Digest(ctx, image, keychain)
		return []string{d}, err
	})
	if len(r.Tags) == 1 {
		r.Digest = r.Tags[0]
	}
	r.Tags = nil
	return r
}

// look answers from the entry of key, of ref (a repository or image), or asks fetch when its
// answer is older than interval, or than a push to it (at most every MinRelist).
func (c *Cache) look(key, ref string, interval time.Duration, fetch func() ([]string, error)) Result {
	e := c.entry(key, ref)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.Clock.Now()
	defer func() {
		keep := now.Add(max(2*interval, idleRetention))
		if e.retryAt.After(keep) { // a backoff runs past it
			keep = e.retryAt
		}
		e.keepUntil.Store(keep.UnixNano())
	}()
	next := e.fetched.Add(interval)
	if e.stale.Load() {
		next = e.fetched.Add(MinRelist)
	}
	switch {
	case e.err == nil && !e.fetched.IsZero() && now.Before(next):
		return Result{Tags: e.tags, Next: next}
	case e.err != nil && now.Before(e.retryAt):
		return Result{Tags: e.tags, Err: e.err, Next: e.retryAt}
	}
	tags, err := fetch()
	if err != nil {
		e.failures++
		e.err = err
		e.retryAt = now.Add(c.backoff(e.failures, err))
		return Result{Tags: e.tags, Err: err, Next: e.retryAt}
	}
	e.tags, e.fetched, e.err, e.failures = tags, now, nil, 0
	e.stale.Store(false)
	return Result{Tags: tags, Next: now.Add(interval)}
}

// Expire marks the answers about repository (a normalised name: index.docker.io/acme/web) as
// older than a push to it: the next look asks again, once MinRelist has passed since the last
// answer. A backoff after a failure still holds. It reports how many answers it expired.
func (c *Cache) Expire(repository string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if e.repository == repository {
			e.stale.Store(true)
			n++
		}
	}
	return n
}

// repositoryOf is the normalised repository of ref, a repository or an image.
func repositoryOf(ref string) string {
	if r, err := name.ParseReference(ref, name.WeakValidation); err == nil {
		return r.Context().Name()
	}
	return ref
}

func (c *Cache) entry(key, ref string) *entry {
	now := c.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*entry{}
	}
	if now.Sub(c.swept) >= sweepEvery {
		c.swept = now
		for k, e := range c.entries {
			if now.UnixNano() > e.keepUntil.Load() {
				delete(c.entries, k)
			}
		}
	}
	e, ok := c.entries[key]
	if !ok {
		e = &entry{repository: repositoryOf(ref)}
		e.keepUntil.Store(now.Add(idleRetention).UnixNano()) // until its first look sets it
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
