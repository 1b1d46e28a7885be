// Package signature verifies the cosign signatures of an image, against a public key or, keyless,
// against an identity and a Sigstore trusted root: the simple-signing payloads `cosign sign`
// pushes beside an image (its tag sha256-<hex>.sig), each naming the digest it signs. It reads
// nothing itself: the registry client brings the signatures, the engine the key or the root.
package signature

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigstoresig "github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// Signed is one signature an image carries: its simple-signing payload and the base64 signature
// of it (the layer's dev.cosignproject.cosign/signature annotation), and for a keyless one the
// signer's certificate (PEM) and cosign's record of its transparency log entry (JSON).
type Signed struct {
	Payload     []byte
	Signature   string
	Certificate string
	Bundle      string
}

// Errors of Verify: the image carries no signature, or none by the key of that digest.
var (
	ErrNoSignature = errors.New("it carries no cosign signature")
	ErrNotByTheKey = errors.New("none of its cosign signatures is by the key")
)

// payload is cosign's simple-signing payload, the part of it that binds the signature.
type payload struct {
	Critical struct {
		Type  string `json:"type"`
		Image struct {
			Digest string `json:"docker-manifest-digest"`
		} `json:"image"`
	} `json:"critical"`
}

const payloadType = "cosign container image signature"

// verifiersOf are the ways a key may have signed: the hash its kind calls for in Sigstore's
// algorithm registry, as cosign signs now (SHA-384 for P-384, Ed25519ph for Ed25519), and SHA-256
// with pure Ed25519, as it signed before.
func verifiersOf(key crypto.PublicKey) ([]sigstoresig.Verifier, error) {
	byKind, err := sigstoresig.LoadDefaultVerifier(key, options.WithED25519ph())
	if err != nil {
		return nil, err
	}
	plain, err := sigstoresig.LoadVerifier(key, crypto.SHA256)
	if err != nil {
		return []sigstoresig.Verifier{byKind}, nil
	}
	return []sigstoresig.Verifier{byKind, plain}, nil
}

// Verify reports whether one of sigs is a signature by the PEM public key of a payload that names
// digest (sha256:…). Its error says why not: ErrNoSignature, ErrNotByTheKey, or a key that cannot
// be read.
func Verify(publicKeyPEM []byte, digest string, sigs []Signed) error {
	if digest == "" {
		return errors.New("no digest to verify")
	}
	key, err := cryptoutils.UnmarshalPEMToPublicKey(publicKeyPEM)
	if err != nil {
		return fmt.Errorf("the public key: %w", err)
	}
	verifiers, err := verifiersOf(key)
	if err != nil {
		return fmt.Errorf("the public key: %w", err)
	}
	if len(sigs) == 0 {
		return ErrNoSignature
	}
	for _, s := range sigs {
		raw, err := base64.StdEncoding.DecodeString(s.Signature)
		if err != nil || !slices.ContainsFunc(verifiers, func(v sigstoresig.Verifier) bool {
			return v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(s.Payload)) == nil
		}) {
			continue
		}
		// The signature is the key's: what it signs must be this image.
		if namesDigest(s.Payload, digest) {
			return nil
		}
	}
	return ErrNotByTheKey
}

// namesDigest: a simple-signing payload that signs the image of digest.
func namesDigest(signed []byte, digest string) bool {
	var p payload
	return json.Unmarshal(signed, &p) == nil && p.Critical.Type == payloadType && p.Critical.Image.Digest == digest
}
