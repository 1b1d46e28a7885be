package registry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLister is the in-memory TagLister: it answers from a script and counts the listings.
type fakeLister struct {
	tags  []string
	err   error
	calls int
}

func (f *fakeLister) ListTags(context.Context, string, authn.Keychain) ([]string, error) {
	f.calls++
	return f.tags, f.err
}

func TestCacheSharesOneListingPerInterval(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := &fakeLister{tags: []string{"1.0.0", "1.1.0"}}
	c := &Cache{Lister: l, Clock: clk}
	ctx := context.Background()

	for range 5 { // five configs of one repository
		r := c.Tags(ctx, "ghcr.io/acme/web", "ghcr.io/acme/web", time.Hour, authn.DefaultKeychain)
		if !slices.Equal(r.Tags, l.tags) || r.Err != nil || !r.Next.Equal(clk.Now().Add(time.Hour)) {
			t.Fatalf("result %+v", r)
		}
	}
	if l.calls != 1 {
		t.Errorf("%d listings for five configs within the interval, want 1", l.calls)
	}
	c.Tags(ctx, "ghcr.io/acme/api", "ghcr.io/acme/api", time.Hour, authn.DefaultKeychain)
	if l.calls != 2 {
		t.Errorf("another repository did not get its own listing")
	}
	clk.SetTime(clk.Now().Add(time.Hour))
	c.Tags(ctx, "ghcr.io/acme/web", "ghcr.io/acme/web", time.Hour, authn.DefaultKeychain)
	if l.calls != 3 {
		t.Errorf("no new listing after the interval")
	}
}

func TestCacheBacksOffAndKeepsTheLastGoodTags(t *testing.T) {
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	l := &fakeLister{tags: []string{"1.0.0"}}
	c := &Cache{Lister: l, Clock: clk, MinBackoff: 30 * time.Second, MaxBackoff: 4 * time.Minute}
	ctx := context.Background()
	get := func() Result { return c.Tags(ctx, "k", "r", time.Minute, authn.DefaultKeychain) }

	get()
	l.err = &Error{StatusCode: 500, Err: errors.New("boom")}
	clk.SetTime(start.Add(time.Minute))
	// Failures in a row wait 30s, 1m, 2m, 4m, 4m: between two listings nothing is asked.
	var waits []time.Duration
	for range 5 {
		r := get()
		if r.Err == nil || !slices.Equal(r.Tags, []string{"1.0.0"}) {
			t.Fatalf("result %+v, want the error and the last good tags", r)
		}
		calls := l.calls
		if again := get(); again.Err == nil || l.calls != calls {
			t.Fatal("listed again during the backoff")
		}
		waits = append(waits, r.Next.Sub(clk.Now()))
		clk.SetTime(r.Next)
	}
	if want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute}; !slices.Equal(waits, want) {
		t.Errorf("backoff %v, want %v", waits, want)
	}

	// A Retry-After longer than the backoff wins.
	l.err = &Error{StatusCode: 429, RetryAfter: 10 * time.Minute, Err: errors.New("slow down")}
	if r := get(); r.Next.Sub(clk.Now()) != 10*time.Minute {
		t.Errorf("Retry-After not honoured: next in %s", r.Next.Sub(clk.Now()))
	}
	// Recovery resets the backoff.
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	l.err, l.tags = nil, []string{"1.0.0", "1.1.0"}
	if r := get(); r.Err != nil || len(r.Tags) != 2 {
		t.Errorf("after recovery: %+v", r)
	}
	l.err = errors.New("down again")
	clk.SetTime(clk.Now().Add(time.Minute))
	if r := get(); r.Next.Sub(clk.Now()) != 30*time.Second {
		t.Errorf("backoff did not restart: %s", r.Next.Sub(clk.Now()))
	}
}

// fakeResolver is a fakeLister that also resolves tags to digests.
type fakeResolver struct {
	fakeLister
	digest  string
	digests int
}

func (f *fakeResolver) Digest(context.Context, string, authn.Keychain) (string, error) {
	f.digests++
	return f.digest, f.err
}

// The digest of a followed tag is shared per interval and kept through a failure, as a listing.
func TestCacheSharesOneDigestPerIntervalAndKeepsItThroughAFailure(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	r := &fakeResolver{digest: "sha256:aa"}
	c := &Cache{Lister: r, Clock: clk, MinBackoff: 30 * time.Second}
	ctx := context.Background()
	get := func() Result {
		return c.Digest(ctx, "digest|web:stable", "web:stable", time.Minute, authn.DefaultKeychain)
	}
	for range 3 {
		if got := get(); got.Digest != "sha256:aa" || got.Err != nil || got.Tags != nil {
			t.Fatalf("result %+v", got)
		}
	}
	if r.digests != 1 || r.calls != 0 {
		t.Errorf("%d look-ups and %d listings for three configs within the interval, want 1 and 0", r.digests, r.calls)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	r.digest, r.err = "", errors.New("down")
	if got := get(); got.Digest != "sha256:aa" || got.Err == nil || !got.Next.Equal(clk.Now().Add(30*time.Second)) {
		t.Errorf("after a failure: %+v, want the last digest, the error and a retry in 30s", got)
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	r.digest, r.err = "sha256:bb", nil
	if got := get(); got.Digest != "sha256:bb" || got.Err != nil {
		t.Errorf("after the backoff: %+v", got)
	}
}

// A lister that cannot resolve digests says so.
func TestCacheDigestNeedsAResolver(t *testing.T) {
	c := &Cache{Lister: &fakeLister{}, Clock: clocktesting.NewFakePassiveClock(time.Now())}
	if got := c.Digest(context.Background(), "k", "web:stable", time.Minute, authn.DefaultKeychain); got.Err == nil || got.Digest != "" {
		t.Errorf("result %+v", got)
	}
}

// A push expires the answers about its repository: the next look lists again, but not sooner than
// MinRelist after the last listing. Other repositories keep theirs.
func TestCacheExpiresTheAnswersOfAPushedRepository(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := &fakeLister{tags: []string{"1.0.0"}}
	c := &Cache{Lister: l, Clock: clk}
	ctx := context.Background()
	web := func() Result { return c.Tags(ctx, "acme/web", "acme/web", time.Hour, authn.DefaultKeychain) }
	api := func() Result {
		return c.Tags(ctx, "ghcr.io/acme/api", "ghcr.io/acme/api", time.Hour, authn.DefaultKeychain)
	}
	web()
	api()
	if n := c.Expire("index.docker.io/acme/web"); n != 1 {
		t.Fatalf("expired %d answers, want the one of acme/web", n)
	}
	if r := web(); l.calls != 2 || !r.Next.Equal(clk.Now().Add(MinRelist)) {
		t.Errorf("a push right after a listing: %d listings, next %v; want none before MinRelist has passed", l.calls, r.Next)
	}
	clk.SetTime(clk.Now().Add(MinRelist))
	if r := web(); l.calls != 3 || !r.Next.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("after MinRelist: %d listings, next %v; want acme/web listed again, and then the interval", l.calls, r.Next)
	}
	api()
	if l.calls != 3 {
		t.Errorf("%d listings, want ghcr.io/acme/api not listed again", l.calls)
	}
}

// An answer nobody asks for any more (its config deleted, or its credentials rotated: another key)
// is dropped, with its tags, a day after its last look or two of its intervals, whichever is later.
func TestCacheForgetsWhatNobodyAsksFor(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	c := &Cache{Lister: &fakeLister{tags: []string{"1.0.0"}}, Clock: clk}
	ctx := context.Background()
	c.Tags(ctx, "gone", "ghcr.io/acme/gone", time.Hour, authn.DefaultKeychain)
	c.Tags(ctx, "slow", "ghcr.io/acme/slow", 48*time.Hour, authn.DefaultKeychain)
	for range 26 { // web is asked every hour
		clk.SetTime(clk.Now().Add(time.Hour))
		c.Tags(ctx, "web", "ghcr.io/acme/web", time.Hour, authn.DefaultKeychain)
	}
	for key, kept := range map[string]bool{"gone": false, "slow": true, "web": true} {
		if _, ok := c.entries[key]; ok != kept {
			t.Errorf("entry %s kept: %v, want %v", key, ok, kept)
		}
	}
}
