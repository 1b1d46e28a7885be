package registry

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// DigestResolver tells the digest an image reference names in its registry.
type DigestResolver interface {
	Digest(ctx context.Context, image string, keychain authn.Keychain) (string, error)
}

// ErrImageNotFound: the registry has no manifest for the reference.
var ErrImageNotFound = errors.New("the registry has no such image (404)")

// DefaultLookUpTimeout bounds one look-up when Remote.Timeout is unset: it runs inside a reconcile.
const DefaultLookUpTimeout = 10 * time.Second

// Digest asks the registry for the manifest image names, by HEAD (no body is read), or by GET
// when the HEAD fails otherwise than with a 404 (registries that do not answer HEAD, or answer it
// without the digest), and returns its digest, sha256:…. A manifest the registry does not have is
// ErrImageNotFound; any other failure is an *Error, in rollgate's words as a listing's are.
func (r Remote) Digest(ctx context.Context, image string, keychain authn.Keychain) (string, error) {
	l, err := r.lookUp(ctx, image, keychain)
	if err != nil {
		return "", err
	}
	defer l.cancel()
	desc, err := remote.Head(l.ref, l.opts...)
	if err == nil && desc.Digest.Hex != "" {
		return desc.Digest.String(), nil
	}
	if notFound(err) {
		return "", ErrImageNotFound
	}
	got, err := remote.Get(l.ref, l.opts...)
	if err != nil {
		return "", l.failed(err)
	}
	return got.Digest.String(), nil
}

// lookUp is one look-up of an image: its reference, and the options of its requests, bounded by
// one timeout (it runs inside a reconcile: a listing's longer timeout does not apply to it).
type lookUp struct {
	ref        name.Reference
	opts       []remote.Option
	retryAfter time.Duration
	cancel     context.CancelFunc
}

func (r Remote) lookUp(ctx context.Context, image string, keychain authn.Keychain) (*lookUp, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	timeout := DefaultLookUpTimeout
	if r.Timeout > 0 {
		timeout = min(r.Timeout, timeout)
	}
	l := &lookUp{ref: ref}
	ctx, l.cancel = context.WithTimeout(ctx, timeout)
	l.opts = r.options(ctx, keychain, &l.retryAfter)
	return l, nil
}

// failed is the look-up's error: ErrImageNotFound for a 404, else an *Error.
func (l *lookUp) failed(err error) error {
	if notFound(err) {
		return ErrImageNotFound
	}
	return classify(err, l.retryAfter)
}

func notFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
