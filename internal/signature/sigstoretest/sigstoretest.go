// Package sigstoretest is a Sigstore instance of a test's own: a certificate authority that
// issues short-lived certificates to an identity as Fulcio does, and a transparency log whose key
// promises to include each entry as Rekor does, with the trusted root (trusted_root.json) that
// names both. It signs as `cosign sign` does without a key, offline.
package sigstoretest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"testing"
	"time"
)

// Instance is a certificate authority and a transparency log.
type Instance struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	logKey *ecdsa.PrivateKey
	logID  []byte
	// TrustedRoot names the CA and the log, as Sigstore's trusted_root.json does.
	TrustedRoot []byte
}

// New makes an instance with fresh keys.
func New(t testing.TB) *Instance {
	t.Helper()
	s := &Instance{caKey: newKey(t), logKey: newKey(t)}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"rollgate test"}, CommonName: "fulcio"},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, s.caKey.Public(), s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	logPub, err := x509.MarshalPKIXPublicKey(s.logKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(logPub)
	s.logID = id[:]
	b64 := base64.StdEncoding.EncodeToString
	s.TrustedRoot = fmt.Appendf(nil, `{
  "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
  "tlogs": [{"baseUrl": "https://rekor.example.com", "hashAlgorithm": "SHA2_256",
    "publicKey": {"rawBytes": %q, "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": {"start": "2020-01-01T00:00:00Z"}},
    "logId": {"keyId": %q}}],
  "certificateAuthorities": [{"subject": {"organization": "rollgate test", "commonName": "fulcio"}, "uri": "https://fulcio.example.com",
    "certChain": {"certificates": [{"rawBytes": %q}]}, "validFor": {"start": "2020-01-01T00:00:00Z"}}],
  "ctlogs": [],
  "timestampAuthorities": []
}`, b64(logPub), b64(s.logID), b64(der))
	return s
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Fulcio's extensions of the OIDC issuer: 1.1 holds it raw, 1.8 as a DER UTF8String.
var (
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// Keyless is how one signature is made.
type Keyless struct {
	// Subject is an e-mail address or a URI; Issuer the OIDC issuer.
	Subject, Issuer string
	// Issued is when the certificate was issued (it is valid 10 minutes), Logged when the log
	// recorded the signature.
	Issued, Logged time.Time
	// IssuedBy is the instance whose CA issues the certificate, if not the signing one's.
	IssuedBy *Instance
}

// SimpleSigning is cosign's payload for the image of digest in the repository reference: what
// `cosign sign` signs.
func SimpleSigning(reference, digest string) []byte {
	return fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		reference, digest)
}

// Signature is a signature as cosign stores it in a layer of an image's .sig manifest: the payload
// (the layer) and its annotations.
type Signature struct {
	Payload     []byte
	Signature   string // dev.cosignproject.cosign/signature: base64
	Certificate string // dev.sigstore.cosign/certificate: PEM
	Bundle      string // dev.sigstore.cosign/bundle: the log's entry and its signed entry timestamp
}

// Annotations are the layer's annotations.
func (s Signature) Annotations() map[string]string {
	return map[string]string{"dev.cosignproject.cosign/signature": s.Signature,
		"dev.sigstore.cosign/certificate": s.Certificate, "dev.sigstore.cosign/bundle": s.Bundle}
}

// Sign signs payload as `cosign sign` does keyless: a certificate for a fresh key, from the CA;
// the signature; and the transparency log's entry of both, with its signed entry timestamp.
func (s *Instance) Sign(t testing.TB, payload []byte, k Keyless) Signature {
	t.Helper()
	key := newKey(t)
	v2, err := asn1.MarshalWithParams(k.Issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: k.Issued, NotAfter: k.Issued.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: oidIssuerV1, Value: []byte(k.Issuer)}, {Id: oidIssuerV2, Value: v2}}}
	if u, err := url.Parse(k.Subject); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{k.Subject}
	}
	ca := s
	if k.IssuedBy != nil {
		ca = k.IssuedBy
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.ca, key.Public(), ca.caKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	// A hashedrekord entry, canonical: keys sorted, no spaces.
	body := b64(fmt.Appendf(nil, `{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":%q}},"signature":{"content":%q,"publicKey":{"content":%q}}}}`,
		hex.EncodeToString(sum[:]), b64(sig), b64(certPEM)))
	const logIndex = 42
	promised := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`, body, k.Logged.Unix(), hex.EncodeToString(s.logID), logIndex)
	setSum := sha256.Sum256([]byte(promised))
	set, err := ecdsa.SignASN1(rand.Reader, s.logKey, setSum[:])
	if err != nil {
		t.Fatal(err)
	}
	return Signature{Payload: payload, Signature: b64(sig), Certificate: string(certPEM),
		Bundle: fmt.Sprintf(`{"SignedEntryTimestamp":%q,"Payload":%s}`, b64(set), promised)}
}
