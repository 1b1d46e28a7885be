package signature

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Identity is who a keyless signature's certificate must name: the OIDC issuer, exactly, and the
// subject (its subject alternative name), exactly or by a regular expression.
type Identity struct {
	Issuer, Subject, SubjectRegExp string
}

// ErrNotByTheIdentity: the image carries signatures, but none made with a certificate for the
// identity that the trusted root vouches for.
var ErrNotByTheIdentity = errors.New("none of its cosign signatures is by the identity")

// rekorBundle is cosign's record of a signature's transparency log entry (a layer's
// dev.sigstore.cosign/bundle annotation): the entry Rekor made and its promise to include it,
// the signed entry timestamp.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"` // base64 of the canonical entry
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"` // hex of the log's key ID
	} `json:"Payload"`
}

// VerifyKeyless reports whether one of sigs was made with a certificate for id, issued by a
// certificate authority of the trusted root (trusted_root.json), valid when a transparency log of
// that root recorded the signature, over a payload that names digest. Its error says why not:
// ErrNoSignature, ErrNotByTheIdentity with the first signature's fault, or a trusted root or
// identity that cannot be read.
func VerifyKeyless(trustedRootJSON []byte, id Identity, digest string, sigs []Signed) error {
	if digest == "" {
		return errors.New("no digest to verify")
	}
	trusted, err := root.NewTrustedRootFromJSON(trustedRootJSON)
	if err != nil {
		return fmt.Errorf("the trusted root: %w", err)
	}
	identity, err := verify.NewShortCertificateIdentity(id.Issuer, "", id.Subject, id.SubjectRegExp)
	if err != nil {
		return fmt.Errorf("the identity: %w", err)
	}
	// The log's time is the one the short-lived certificate is checked at.
	verifier, err := verify.NewVerifier(trusted, verify.WithTransparencyLog(1), verify.WithIntegratedTimestamps(1))
	if err != nil {
		return fmt.Errorf("the trusted root: %w", err)
	}
	if len(sigs) == 0 {
		return ErrNoSignature
	}
	var first error
	for _, s := range sigs {
		err := verifyOne(verifier, identity, digest, s)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("%w: %w", ErrNotByTheIdentity, first)
}

// verifyOne checks one signature against the verifier's trusted root and the identity.
func verifyOne(verifier *verify.Verifier, identity verify.CertificateIdentity, digest string, s Signed) error {
	if s.Certificate == "" || s.Bundle == "" {
		return errors.New("a signature has no certificate or no transparency log entry: made with a key, or not logged")
	}
	b, err := legacyBundle(s)
	if err != nil {
		return err
	}
	if _, err := verifier.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(s.Payload)), verify.WithCertificateIdentity(identity))); err != nil {
		return err
	}
	if !namesDigest(s.Payload, digest) {
		return errors.New("a signature by the identity is of another image")
	}
	return nil
}

// legacyBundle is a Sigstore bundle of what cosign stores beside a signature: its certificate
// and the Rekor entry with its signed entry timestamp, which is what a bundle of version 0.1
// holds.
func legacyBundle(s Signed) (*bundle.Bundle, error) {
	block, _ := pem.Decode([]byte(s.Certificate))
	if block == nil {
		return nil, errors.New("a signature's certificate is not PEM")
	}
	raw, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		return nil, errors.New("a signature is not base64")
	}
	var rb rekorBundle
	if err := json.Unmarshal([]byte(s.Bundle), &rb); err != nil {
		return nil, fmt.Errorf("a signature's transparency log entry: %w", err)
	}
	body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil {
		return nil, errors.New("a signature's transparency log entry has a body that is not base64")
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, errors.New("a signature's transparency log entry has a log ID that is not hex")
	}
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("a signature's transparency log entry: %w", err)
	}
	sum := sha256.Sum256(s.Payload)
	return bundle.NewBundle(&protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: block.Bytes}},
			TlogEntries: []*protorekor.TransparencyLogEntry{{
				LogIndex:          rb.Payload.LogIndex,
				LogId:             &protocommon.LogId{KeyId: logID},
				KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
				IntegratedTime:    rb.Payload.IntegratedTime,
				InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
				CanonicalizedBody: body,
			}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     raw,
		}},
	})
}
