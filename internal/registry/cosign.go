package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// CosignSignature is one signature of an image as cosign stores it: a layer of the image's
// signature manifest, whose blob is the signed payload and whose annotations are the signature
// and, for a keyless one, the signer's certificate and the transparency log's entry.
type CosignSignature struct {
	Payload     []byte
	Signature   string // base64
	Certificate string // PEM
	Bundle      string // cosign's JSON of the Rekor entry and its signed entry timestamp
}

// SignatureReader reads the cosign signatures of an image.
type SignatureReader interface {
	CosignSignatures(ctx context.Context, image string, keychain authn.Keychain) ([]CosignSignature, error)
}

// Bounds of one image's signatures: a tenant's registry serves them.
const (
	MaxSignatures       = 16
	MaxSignaturePayload = 64 << 10
)

// The annotations of a signature layer: the signature, and for a keyless one its certificate and
// transparency log entry.
const (
	cosignSignatureAnnotation   = "dev.cosignproject.cosign/signature"
	cosignCertificateAnnotation = "dev.sigstore.cosign/certificate"
	cosignBundleAnnotation      = "dev.sigstore.cosign/bundle"
)

// CosignSignatures reads the signatures cosign pushed for image, which must name its digest
// (repo[:tag]@sha256:…): the manifest of the tag sha256-<hex>.sig in its repository. An image with
// no such tag has none. The first MaxSignatures signatures of MaxSignaturePayload bytes at most
// are read, within one look-up's timeout.
func (r Remote) CosignSignatures(ctx context.Context, image string, keychain authn.Keychain) ([]CosignSignature, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	dg, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("%s names no digest", image)
	}
	l, err := r.lookUp(ctx, ref.Context().Tag(strings.Replace(dg.DigestStr(), ":", "-", 1)+".sig").String(), keychain)
	if err != nil {
		return nil, err
	}
	defer l.cancel()
	img, err := remote.Image(l.ref, l.opts...)
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, l.failed(err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, l.failed(err)
	}
	var out []CosignSignature
	for _, desc := range m.Layers {
		if len(out) == MaxSignatures {
			break // signing again adds a layer: the first are read, and one by the key among them
		}
		sig := desc.Annotations[cosignSignatureAnnotation]
		if sig == "" || desc.Size > MaxSignaturePayload {
			continue // not a signature, or not one cosign makes
		}
		layer, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			return nil, l.failed(err)
		}
		rc, err := layer.Compressed()
		if err != nil {
			return nil, l.failed(err)
		}
		payload, err := io.ReadAll(io.LimitReader(rc, MaxSignaturePayload+1))
		_ = rc.Close()
		if err != nil {
			return nil, l.failed(err)
		}
		if len(payload) > MaxSignaturePayload {
			return nil, &Error{Reason: "served a signature larger than its manifest says", Err: errors.New("payload too large")}
		}
		out = append(out, CosignSignature{Payload: payload, Signature: sig,
			Certificate: desc.Annotations[cosignCertificateAnnotation], Bundle: desc.Annotations[cosignBundleAnnotation]})
	}
	return out, nil
}
