// Package registry lists the tags of image repositories: a TagLister that talks to a registry with
// go-containerregistry, and a Cache that shares one listing per repository and interval among all
// configs and backs off from a registry that fails or rate-limits.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
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

// Remote lists tags from the registry itself, page by page. A registry on a loopback or private
// address is spoken to over plain HTTP (go-containerregistry's rule), everything else over HTTPS.
//
// A listing is bounded in time, pages and bytes: one registry that accepts a connection and never
// answers, pages for ever or sends an endless body must cost its own config a failed listing, not
// the manager a worker or its memory.
type Remote struct {
	// Transport carries the requests; nil means the transport of the zero AddressPolicy.
	Transport http.RoundTripper
	// PageSize asks the registry for this many tags a page; 0 leaves it to the registry.
	PageSize int
	// Timeout bounds a whole listing, every page included; 0 means DefaultListTimeout.
	Timeout time.Duration
	// MaxPages bounds the pages of a listing; 0 means DefaultMaxPages.
	MaxPages int
	// MaxBytes bounds the bytes read in a listing, error bodies included; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Limits paces the requests to each registry host; nil means no pacing.
	Limits *HostLimits
}

// The bounds of a listing when Remote leaves them unset.
const (
	DefaultListTimeout = 30 * time.Second
	DefaultMaxPages    = 100
	DefaultMaxBytes    = 16 << 20
)

// defaultTransport is built once, so that listings share its connections.
var defaultTransport = sync.OnceValue(AddressPolicy{}.Transport)

// ListTags lists every tag of repository. Failures are returned at once, without retries: the
// Cache decides when to try again.
func (r Remote) ListTags(ctx context.Context, repository string, keychain authn.Keychain) ([]string, error) {
	repo, err := name.NewRepository(repository, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(r.Timeout, DefaultListTimeout))
	defer cancel()
	var retryAfter time.Duration
	opts := r.options(ctx, keychain, &retryAfter)
	if r.PageSize > 0 {
		opts = append(opts, remote.WithPageSize(r.PageSize))
	}
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return nil, classify(err, retryAfter)
	}
	maxPages := cmp.Or(r.MaxPages, DefaultMaxPages)
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == maxPages {
			return nil, &Error{Reason: fmt.Sprintf("listing stopped: more than %d pages of tags", maxPages), Err: errors.New("page cap reached")}
		}
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, classify(err, retryAfter)
		}
		tags = append(tags, page.Tags...)
	}
	return tags, nil
}

// options are the go-containerregistry options of one bounded exchange with a registry: paced
// per host, within the address policy and the byte cap, retried by no one (the caller decides),
// and recording the registry's Retry-After into retryAfter.
func (r Remote) options(ctx context.Context, keychain authn.Keychain, retryAfter *time.Duration) []remote.Option {
	base := r.Transport
	if base == nil {
		base = defaultTransport()
	}
	if r.Limits != nil {
		base = rateLimited{base: base, limits: r.Limits}
	}
	budget := &byteBudget{left: cmp.Or(r.MaxBytes, DefaultMaxBytes)}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keychain),
		remote.WithTransport(retryAfterRecorder{base: byteCapped{base: base, budget: budget}, into: retryAfter}),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
	}
}

// byteBudget is what a listing may still read.
type byteBudget struct{ left int64 }

// errTooLarge: a listing read more than its byte cap.
var errTooLarge = errors.New("the registry sent more than the byte cap of a listing")

// byteCapped counts the bytes of every response body of a listing against one budget.
type byteCapped struct {
	base   http.RoundTripper
	budget *byteBudget
}

func (t byteCapped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, budget: t.budget}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	budget *byteBudget
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.budget.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.budget.left {
		p = p[:b.budget.left+1] // one byte more tells a body that ends at the cap from one beyond
	}
	n, err := b.ReadCloser.Read(p)
	b.budget.left -= int64(n)
	if b.budget.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// Error is a failed listing, classified for messages and backoff. Its message is rollgate's own
// words only (the status code and what it means): what the registry wrote, or which address could
// not be reached, stays in the wrapped error for the manager's log. A config's conditions and
// events are read by its tenant, and a registry must not be a way to read another host's answers.
type Error struct {
	// StatusCode is the registry's HTTP status; 0 when it gave none.
	StatusCode int
	// RetryAfter is the registry's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Reason says, when StatusCode is 0, what went wrong in a few words ("unreachable (…)").
	Reason string
	Err    error
}

func (e *Error) Error() string {
	switch {
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("registry refused access (%d): check the workload's imagePullSecrets or service account", e.StatusCode)
	case e.StatusCode == http.StatusNotFound:
		return "repository not found in the registry (404)"
	case e.StatusCode == http.StatusTooManyRequests:
		return "registry rate limit (429)"
	case e.StatusCode >= 500:
		return fmt.Sprintf("registry failed (%d)", e.StatusCode)
	case e.StatusCode == 0:
		return "registry " + e.Reason
	}
	return fmt.Sprintf("registry answered %d", e.StatusCode)
}

func (e *Error) Unwrap() error { return e.Err }

func classify(err error, retryAfter time.Duration) *Error {
	var te *transport.Error
	if errors.As(err, &te) {
		return &Error{StatusCode: te.StatusCode, RetryAfter: retryAfter, Err: err}
	}
	return &Error{Err: err, RetryAfter: retryAfter, Reason: unreachable(err)}
}

// unreachable names the kind of a failure to get an answer, without the address.
func unreachable(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var identity *IdentityError
	switch {
	case errors.As(err, &identity):
		return "unreachable (" + identity.Error() + ")"
	case errors.Is(err, errTooLarge):
		return "listing stopped: " + errTooLarge.Error()
	case errors.Is(err, errAddressRefused):
		return "refused: " + errAddressRefused.Error()
	case errors.Is(err, errRedirectRefused):
		return "refused: " + errRedirectRefused.Error()
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "unreachable (no answer in time)"
	case errors.As(err, &dns):
		return "unreachable (name not found)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "unreachable (connection refused)"
	case errors.As(err, &op):
		return "unreachable (connection failed)"
	}
	return "unreachable (no valid answer)"
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
