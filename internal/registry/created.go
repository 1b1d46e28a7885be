package registry

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// CreationReader tells when the image an image reference names was built, by its registry.
type CreationReader interface {
	Created(ctx context.Context, image string, keychain authn.Keychain) (time.Time, error)
}

// Created reads the creation time ("created") in the config of the image that image names (of
// its linux/amd64 image, for an index): the manifest and the config blob, two GETs within one
// look-up's timeout and a listing's byte cap. A manifest the registry does not have is
// ErrImageNotFound; any other failure is an *Error. The time is the image's word: a build may
// set any (reproducible builds set 1970), which the caller judges.
func (r Remote) Created(ctx context.Context, image string, keychain authn.Keychain) (time.Time, error) {
	l, err := r.lookUp(ctx, image, keychain)
	if err != nil {
		return time.Time{}, err
	}
	defer l.cancel()
	img, err := remote.Image(l.ref, l.opts...)
	if err != nil {
		return time.Time{}, l.failed(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return time.Time{}, l.failed(err)
	}
	return cf.Created.Time, nil
}
