package signature

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigstoresig "github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/rollgate/rollgate/internal/signature/sigstoretest"
)

// keyPair is a cosign key pair of the test's own, ECDSA P-256 signing with SHA-256: the PEM
// public key, and a signer.
func keyPair(t *testing.T) ([]byte, func(payload []byte) string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sigstoresig.LoadSigner(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return pairOf(t, priv.Public(), signer)
}

// pairOf is the PEM of pub and a signer of payloads.
func pairOf(t *testing.T, pub crypto.PublicKey, signer sigstoresig.Signer) ([]byte, func(payload []byte) string) {
	t.Helper()
	pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem, func(payload []byte) string {
		sig, err := signer.SignMessage(strings.NewReader(string(payload)))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(sig)
	}
}

// simpleSigning is cosign's payload for an image of digest.
func simpleSigning(digest string) []byte {
	return sigstoretest.SimpleSigning("registry.example.com/acme/web", digest)
}

// An image is verified by a signature of the key over a payload that names its digest; any other
// signature, or none, is not enough.
func TestVerify(t *testing.T) {
	const digest, other = "sha256:aaaa", "sha256:bbbb"
	pub, sign := keyPair(t)
	otherPub, signOther := keyPair(t)
	p := simpleSigning(digest)
	cases := []struct {
		name string
		key  []byte
		sigs []Signed
		want error // nil: verified
	}{
		{"signed by the key", pub, []Signed{{Payload: p, Signature: sign(p)}}, nil},
		{"one of several signatures is by the key", pub, []Signed{{Payload: p, Signature: signOther(p)}, {Payload: p, Signature: sign(p)}}, nil},
		{"no signature", pub, nil, ErrNoSignature},
		{"signed by another key", pub, []Signed{{Payload: p, Signature: signOther(p)}}, ErrNotByTheKey},
		{"the key's signature of another image", pub, []Signed{{Payload: simpleSigning(other), Signature: sign(simpleSigning(other))}}, ErrNotByTheKey},
		{"a payload changed after signing", pub, []Signed{{Payload: simpleSigning(digest + "0"), Signature: sign(p)}}, ErrNotByTheKey},
		{"a signature that is not base64", pub, []Signed{{Payload: p, Signature: "!!"}}, ErrNotByTheKey},
		{"a payload of another type", pub, []Signed{{Payload: []byte(strings.Replace(string(p), "cosign container image signature", "x", 1)),
			Signature: sign([]byte(strings.Replace(string(p), "cosign container image signature", "x", 1)))}}, ErrNotByTheKey},
		{"the other key verifies its own", otherPub, []Signed{{Payload: p, Signature: signOther(p)}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.key, digest, tc.sigs); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	if err := Verify(pub, "", []Signed{{Payload: simpleSigning(""), Signature: sign(simpleSigning(""))}}); err == nil {
		t.Error("a payload without a digest verified an image without one")
	}
	if err := Verify([]byte("not a key"), digest, nil); err == nil || !strings.Contains(err.Error(), "the public key") {
		t.Errorf("a key that is no PEM: %v", err)
	}
}

// Keys of every kind cosign makes verify as cosign signs with them: by the hash Sigstore's
// algorithm registry gives their kind (SHA-384 for P-384, Ed25519ph for Ed25519), and by SHA-256
// and pure Ed25519, as older cosign did.
func TestEveryKindOfKey(t *testing.T) {
	const digest = "sha256:aaaa"
	p := simpleSigning(digest)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signers := map[string]struct {
		pub  crypto.PublicKey
		load func() (sigstoresig.Signer, error)
	}{
		"ECDSA P-384, SHA-384": {p384.Public(), func() (sigstoresig.Signer, error) { return sigstoresig.LoadDefaultSigner(p384) }},
		"ECDSA P-384, SHA-256": {p384.Public(), func() (sigstoresig.Signer, error) { return sigstoresig.LoadSigner(p384, crypto.SHA256) }},
		"Ed25519ph": {edPub, func() (sigstoresig.Signer, error) {
			return sigstoresig.LoadDefaultSigner(edPriv, options.WithED25519ph())
		}},
		"Ed25519":         {edPub, func() (sigstoresig.Signer, error) { return sigstoresig.LoadSigner(edPriv, crypto.Hash(0)) }},
		"RSA PKCS#1 v1.5": {rsaKey.Public(), func() (sigstoresig.Signer, error) { return sigstoresig.LoadSigner(rsaKey, crypto.SHA256) }},
	}
	for name, s := range signers {
		t.Run(name, func(t *testing.T) {
			signer, err := s.load()
			if err != nil {
				t.Fatal(err)
			}
			pub, sign := pairOf(t, s.pub, signer)
			if err := Verify(pub, digest, []Signed{{Payload: p, Signature: sign(p)}}); err != nil {
				t.Errorf("Verify = %v", err)
			}
		})
	}
}
