package registry

import (
	"cmp"
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

// Digest asks the registry for the manifest image names, by HEAD (no body is read), and returns
// its digest, sha256:…. A tag the registry does not have is ErrImageNotFound; any other failure
// is an *Error, in rollgate's words as a listing's are.
func (r Remote) Digest(ctx context.Context, image string, keychain authn.Keychain) (string, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(r.Timeout, DefaultListTimeout))
	defer cancel()
	var retryAfter time.Duration
	desc, err := remote.Head(ref, r.options(ctx, keychain, &retryAfter)...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return "", ErrImageNotFound
		}
		return "", classify(err, retryAfter)
	}
	return desc.Digest.String(), nil
}
