// Package registry lists the tags of image repositories: a TagLister that talks to a registry with
// go-containerregistry, and a Cache that shares one listing per repository and interval among all
// configs and backs off from a registry that fails or rate-limits.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// TagLister lists the tags of one repository.
type TagLister interface {
	ListTags(ctx context.Context, repository string, keychain authn.Keychain) ([]string, error)
}

// Remote lists tags from the registry itself. remote.List follows the registry's pagination. A
// registry on a loopback or private address is spoken to over plain HTTP (go-containerregistry's
// rule), everything else over HTTPS.
type Remote struct {
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// PageSize asks the registry for this many tags a page; 0 leaves it to the registry.
	PageSize int
}

// ListTags lists every tag of repository. Failures are returned at once, without retries: the
// Cache decides when to try again.
func (r Remote) ListTags(ctx context.Context, repository string, keychain authn.Keychain) ([]string, error) {
	repo, err := name.NewRepository(repository, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	base := r.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	var retryAfter time.Duration
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keychain),
		remote.WithTransport(retryAfterRecorder{base: base, into: &retryAfter}),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
	}
	if r.PageSize > 0 {
		opts = append(opts, remote.WithPageSize(r.PageSize))
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, classify(err, retryAfter)
	}
	return tags, nil
}

// Error is a failed listing, classified for messages and backoff.
type Error struct {
	// StatusCode is the registry's HTTP status; 0 when it could not be reached.
	StatusCode int
	// RetryAfter is the registry's Retry-After, when it sent one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	switch {
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("registry refused access (%d): check the workload's imagePullSecrets or service account: %v", e.StatusCode, e.Err)
	case e.StatusCode == http.StatusNotFound:
		return fmt.Sprintf("repository not found in the registry (404): %v", e.Err)
	case e.StatusCode == http.StatusTooManyRequests:
		return fmt.Sprintf("registry rate limit (429): %v", e.Err)
	case e.StatusCode >= 500:
		return fmt.Sprintf("registry failed (%d): %v", e.StatusCode, e.Err)
	case e.StatusCode == 0:
		return fmt.Sprintf("registry unreachable: %v", e.Err)
	}
	return fmt.Sprintf("registry answered %d: %v", e.StatusCode, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func classify(err error, retryAfter time.Duration) *Error {
	var te *transport.Error
	if errors.As(err, &te) {
		return &Error{StatusCode: te.StatusCode, RetryAfter: retryAfter, Err: err}
	}
	return &Error{Err: err, RetryAfter: retryAfter}
}

// retryAfterRecorder keeps the Retry-After of a 429 or 503 answer, which go-containerregistry's
// error does not carry.
type retryAfterRecorder struct {
	base http.RoundTripper
	into *time.Duration
}

func (t retryAfterRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			*t.into = d
		}
	}
	return resp, err
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
