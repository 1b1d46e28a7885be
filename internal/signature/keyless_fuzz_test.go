package signature

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/rollgate/rollgate/internal/signature/sigstoretest"
)

// FuzzKeyless: whatever certificate, log entry and signature a registry serves beside a payload,
// the check answers; one it accepts carries the signature the identity made.
func FuzzKeyless(f *testing.F) {
	store := sigstoretest.New(f)
	const digest, issuer, subject = "sha256:aaaa", "https://token.actions.githubusercontent.com", "release@acme.example"
	now := time.Now().Add(-time.Hour)
	signed := store.Sign(f, simpleSigning(digest), sigstoretest.Keyless{Subject: subject, Issuer: issuer, Issued: now, Logged: now})
	made, err := base64.StdEncoding.DecodeString(signed.Signature)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed.Certificate, signed.Bundle, signed.Signature)
	f.Add(signed.Certificate, signed.Bundle, signed.Signature[:8]+"\n"+signed.Signature[8:]) // the same bytes
	f.Add("", signed.Bundle, signed.Signature)
	f.Add(signed.Certificate, `{"SignedEntryTimestamp":"","Payload":{"body":"e30=","logID":"zz"}}`, signed.Signature)
	f.Add("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n", "{}", "")
	f.Fuzz(func(t *testing.T, certificate, bundle, sig string) {
		err := VerifyKeyless(store.TrustedRoot, Identity{Issuer: issuer, Subject: subject}, digest,
			[]Signed{{Payload: signed.Payload, Signature: sig, Certificate: certificate, Bundle: bundle}})
		// base64 has more than one spelling of the same bytes: those are the same signature.
		if got, _ := base64.StdEncoding.DecodeString(sig); err == nil && !bytes.Equal(got, made) {
			t.Errorf("a signature the identity did not make verified: %q", sig)
		}
	})
}
