package signature

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rollgate/rollgate/internal/signature/sigstoretest"
)

// keylessBy signs payload with s as k says, as the registry client reads it.
func keylessBy(t *testing.T, s *sigstoretest.Instance, payload []byte, k sigstoretest.Keyless) Signed {
	return Signed(s.Sign(t, payload, k))
}

// A keyless signature verifies when its certificate is for the identity, from a CA of the trusted
// root, valid when a log of that root recorded it, over a payload that names the image; any
// other, or none, is not enough.
func TestVerifyKeyless(t *testing.T) {
	const digest, other = "sha256:aaaa", "sha256:bbbb"
	const workflow = "https://github.com/acme/shop/.github/workflows/release.yaml@refs/tags/v1.4.2"
	const actions = "https://token.actions.githubusercontent.com"
	store, elsewhere := sigstoretest.New(t), sigstoretest.New(t)
	now := time.Now().Add(-time.Hour).Truncate(time.Second)
	ci := sigstoretest.Keyless{Subject: workflow, Issuer: actions, Issued: now, Logged: now.Add(time.Minute)}
	byCI := keylessBy(t, store, simpleSigning(digest), ci)
	_, signWithKey := keyPair(t)
	with := func(change func(*sigstoretest.Keyless)) sigstoretest.Keyless {
		k := ci
		change(&k)
		return k
	}
	cases := []struct {
		name string
		id   Identity
		root []byte
		sigs []Signed
		// expected: nil, or the error it wraps (saying says), or the text of another error
		want     error
		says     string
		wantText string
	}{
		{name: "by the workflow, from the trusted CA, logged while its certificate was valid",
			id: Identity{Issuer: actions, Subject: workflow}, sigs: []Signed{byCI}},
		{name: "the subject by a regular expression", id: Identity{Issuer: actions, SubjectRegExp: `^https://github\.com/acme/shop/\.github/workflows/release\.yaml@refs/tags/v`},
			sigs: []Signed{byCI}},
		{name: "the one by the identity among others",
			id:   Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{keylessBy(t, store, simpleSigning(digest), with(func(k *sigstoretest.Keyless) { k.Subject = "mallory@example.com" })), byCI}},
		{name: "an e-mail identity", id: Identity{Issuer: "https://accounts.google.com", Subject: "release@acme.example"},
			sigs: []Signed{keylessBy(t, store, simpleSigning(digest), sigstoretest.Keyless{Subject: "release@acme.example", Issuer: "https://accounts.google.com", Issued: now, Logged: now})}},
		{name: "another subject", id: Identity{Issuer: actions, Subject: "https://github.com/acme/shop/.github/workflows/release.yaml@refs/heads/main"},
			sigs: []Signed{byCI}, want: ErrNotByTheIdentity},
		{name: "a subject the expression does not match", id: Identity{Issuer: actions, SubjectRegExp: `^https://github\.com/acme/other/`},
			sigs: []Signed{byCI}, want: ErrNotByTheIdentity},
		{name: "another issuer", id: Identity{Issuer: "https://gitlab.com", Subject: workflow}, sigs: []Signed{byCI}, want: ErrNotByTheIdentity},
		{name: "a certificate of a CA the root does not name", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{keylessBy(t, store, simpleSigning(digest), with(func(k *sigstoretest.Keyless) { k.IssuedBy = elsewhere }))}, want: ErrNotByTheIdentity},
		{name: "a log entry promised by a log the root does not name", id: Identity{Issuer: actions, Subject: workflow},
			root: elsewhere.TrustedRoot, sigs: []Signed{byCI}, want: ErrNotByTheIdentity},
		{name: "logged after its certificate expired", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{keylessBy(t, store, simpleSigning(digest), with(func(k *sigstoretest.Keyless) { k.Logged = k.Issued.Add(11 * time.Minute) }))}, want: ErrNotByTheIdentity},
		{name: "by the identity, of another image", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{keylessBy(t, store, simpleSigning(other), ci)}, want: ErrNotByTheIdentity},
		{name: "a payload changed after signing", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{func() Signed {
				s := keylessBy(t, store, simpleSigning(other), ci)
				s.Payload = simpleSigning(digest)
				return s
			}()}, want: ErrNotByTheIdentity},
		{name: "a log entry of another signature", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{func() Signed { s := byCI; s.Bundle = keylessBy(t, store, simpleSigning(digest), ci).Bundle; return s }()}, want: ErrNotByTheIdentity},
		{name: "made with a key", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{{Payload: simpleSigning(digest), Signature: signWithKey(simpleSigning(digest))}}, want: ErrNotByTheIdentity,
			says: "no certificate or no transparency log entry: made with a key, or not logged"},
		{name: "keyless, not logged", id: Identity{Issuer: actions, Subject: workflow},
			sigs: []Signed{func() Signed { s := byCI; s.Bundle = ""; return s }()}, want: ErrNotByTheIdentity,
			says: "no certificate or no transparency log entry: made with a key, or not logged"},
		{name: "no signature", id: Identity{Issuer: actions, Subject: workflow}, want: ErrNoSignature},
		{name: "a trusted root that is not one", id: Identity{Issuer: actions, Subject: workflow}, root: []byte(`{"mediaType": 1}`),
			sigs: []Signed{byCI}, wantText: "the trusted root: "},
		{name: "an expression that is not one", id: Identity{Issuer: actions, SubjectRegExp: `(`}, sigs: []Signed{byCI}, wantText: "the identity: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			if root == nil {
				root = store.TrustedRoot
			}
			err := VerifyKeyless(root, tc.id, digest, tc.sigs)
			switch {
			case tc.wantText != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantText) || errors.Is(err, ErrNotByTheIdentity) {
					t.Errorf("error %v, want one starting %q", err, tc.wantText)
				}
			case tc.want == nil && err != nil:
				t.Errorf("error %v, want it verified", err)
			case tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("error %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// BenchmarkVerifyKeyless is one check of a keyless signature: reading the trusted root, and the
// certificate, log entry and signature of one signature by the identity.
func BenchmarkVerifyKeyless(b *testing.B) {
	store := sigstoretest.New(b)
	const digest, issuer, subject = "sha256:aaaa", "https://token.actions.githubusercontent.com", "release@acme.example"
	now := time.Now().Add(-time.Hour)
	sigs := []Signed{Signed(store.Sign(b, simpleSigning(digest), sigstoretest.Keyless{Subject: subject, Issuer: issuer, Issued: now, Logged: now}))}
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyKeyless(store.TrustedRoot, Identity{Issuer: issuer, Subject: subject}, digest, sigs); err != nil {
			b.Fatal(err)
		}
	}
}
