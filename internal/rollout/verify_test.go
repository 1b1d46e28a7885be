package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// verified makes a config check cosign signatures with the key in Secret cosign.
func verified(c *v1alpha1.RollingUpgradeConfig) {
	c.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{PublicKeySecretRef: &v1alpha1.SecretKeyReference{Name: "cosign"}}}
}

// A version starts only once its image, pinned by the digest the registry resolves, carries a
// signature by the key; an unsigned one waits, is never rendered, and says why once.
func TestVerifiedVersionsOnly(t *testing.T) {
	pinned := repo + ":1.1.0@" + digestOf("b")
	lookup := &ImageLookup{Image: repo + ":1.1.0", Digest: digestOf("b")}
	cases := []struct {
		name      string
		signature *SignatureAnswer
		// expected
		needs      string // the question asked, if any
		wantTarget string
		wantReason string
		wantHold   string
		wantSays   string
		wantEvents string
	}{
		{name: "the signature is asked for the pinned image", needs: "SignatureCheck " + pinned},
		{name: "a signed image starts, pinned", signature: &SignatureAnswer{Image: pinned, Signed: true},
			wantTarget: pinned, wantReason: v1alpha1.ReasonProgressing, wantEvents: "VersionAvailable,UpdateStarting"},
		{name: "an unsigned image waits and is never rendered",
			signature:  &SignatureAnswer{Image: pinned, Unsigned: "it carries no cosign signature"},
			wantReason: v1alpha1.ReasonUnsigned, wantHold: v1alpha1.ReasonUnsigned,
			wantSays:   pinned + " is not signed by the key in Secret cosign (cosign.pub): it carries no cosign signature",
			wantEvents: "VersionAvailable,Unsigned"},
		{name: "a check that cannot be made waits without a verdict",
			signature:  &SignatureAnswer{Image: pinned, Problem: "Secret cosign not found"},
			wantReason: v1alpha1.EventRegistryUnavailable, wantSays: "Secret cosign not found; 1.1.0 waits",
			wantEvents: "VersionAvailable,RegistryUnavailable"},
		{name: "an answer about another image is asked again", signature: &SignatureAnswer{Image: repo + ":1.0.9@" + digestOf("c"), Signed: true},
			needs: "SignatureCheck " + pinned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: config(current("1.0.0"), verified), Workload: deploymentAt("1.0.0", healthy),
				Candidates: av("1.1.0"), Image: lookup, Signature: tc.signature})
			var needs []string
			for _, q := range d.Needs {
				if s, ok := q.(SignatureCheck); ok {
					needs = append(needs, "SignatureCheck "+s.Image)
				}
			}
			if strings.Join(needs, ",") != tc.needs {
				t.Errorf("needs %v, want %q", needs, tc.needs)
			}
			if tc.needs != "" {
				return
			}
			if got := reasons(d.Events); got != tc.wantEvents {
				t.Errorf("events %s, want %s", got, tc.wantEvents)
			}
			if d.Annotations.TargetImage != tc.wantTarget {
				t.Errorf("target %q, want %q", d.Annotations.TargetImage, tc.wantTarget)
			}
			r := condition(d, meta.ReadyCondition)
			if r == nil || r.Reason != tc.wantReason || !strings.Contains(r.Message, tc.wantSays) {
				t.Errorf("Ready %+v, want %s saying %q", r, tc.wantReason, tc.wantSays)
			}
			if got := ""; d.Status.Hold != nil {
				got = d.Status.Hold.Reason
				if got != tc.wantHold {
					t.Errorf("hold %q, want %q", got, tc.wantHold)
				}
			} else if tc.wantHold != "" {
				t.Errorf("no hold, want %q", tc.wantHold)
			}
		})
	}
}

// An image that stays unsigned says so once: the looks after the first find the same.
func TestAnUnsignedImageWarnsOnce(t *testing.T) {
	pinned := repo + ":1.1.0@" + digestOf("b")
	cfg := config(current("1.0.0"), verified)
	in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
		Image:     &ImageLookup{Image: repo + ":1.1.0", Digest: digestOf("b")},
		Signature: &SignatureAnswer{Image: pinned, Unsigned: "none of its cosign signatures is by the key"}}
	d := Decide(in)
	for i := range 3 {
		in.Config, in.Now = next(in.Config, d), in.Now.Add(time.Minute)
		if d = Decide(in); reasons(d.Events) != "" {
			t.Errorf("look %d: events %s, want none", i+2, reasons(d.Events))
		}
	}
}

// keylessBy makes a config accept keyless signatures of the identity, exact or by expression.
func keylessBy(subject, subjectRegExp string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{Keyless: &v1alpha1.CosignKeyless{
			Issuer: "https://token.actions.githubusercontent.com", Subject: subject, SubjectRegExp: subjectRegExp,
			TrustedRootRef: v1alpha1.ConfigMapKeyReference{Name: "sigstore"}}}}
	}
}

// A keyless check names the identity it wants wherever the key would be named; an expression
// that does not compile stalls the config before any signature is read.
func TestKeylessChecksNameTheIdentity(t *testing.T) {
	pinned := repo + ":1.1.0@" + digestOf("b")
	const workflow = "https://github.com/acme/shop/.github/workflows/release.yaml@refs/heads/main"
	cases := []struct {
		name      string
		verify    func(*v1alpha1.RollingUpgradeConfig)
		signature *SignatureAnswer
		// expected
		wantReason, wantSays string
	}{
		{name: "signed by the subject: the start says by whom", verify: keylessBy(workflow, ""),
			signature:  &SignatureAnswer{Image: pinned, Signed: true},
			wantReason: v1alpha1.ReasonProgressing, wantSays: "signed by " + workflow + " of https://token.actions.githubusercontent.com"},
		{name: "not signed by the subject", verify: keylessBy(workflow, ""),
			signature:  &SignatureAnswer{Image: pinned, Unsigned: "none of its cosign signatures is by the identity: expected SAN value"},
			wantReason: v1alpha1.ReasonUnsigned,
			wantSays: pinned + " is not signed by " + workflow + " of https://token.actions.githubusercontent.com (spec.verify.cosign.keyless): " +
				"none of its cosign signatures is by the identity"},
		{name: "not signed by a subject the expression matches", verify: keylessBy("", "^https://github.com/acme/"),
			signature:  &SignatureAnswer{Image: pinned, Unsigned: "it carries no cosign signature"},
			wantReason: v1alpha1.ReasonUnsigned, wantSays: "is not signed by a subject matching ^https://github.com/acme/ of https://token.actions.githubusercontent.com"},
		{name: "neither a key nor an identity (written around the API server)",
			verify: func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{}}
			},
			wantReason: v1alpha1.EventInvalidSpec, wantSays: "spec.verify.cosign names no signer: set publicKeySecretRef or keyless"},
		{name: "an expression that does not compile", verify: keylessBy("", "^(acme"),
			wantReason: v1alpha1.EventInvalidSpec, wantSays: "spec.verify.cosign.keyless.subjectRegExp: error parsing regexp: missing closing )"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: config(current("1.0.0"), tc.verify), Workload: deploymentAt("1.0.0", healthy),
				Candidates: av("1.1.0"), Image: &ImageLookup{Image: repo + ":1.1.0", Digest: digestOf("b")}, Signature: tc.signature})
			for _, q := range d.Needs {
				if _, ok := q.(SignatureCheck); ok {
					t.Errorf("asked for the signatures")
				}
			}
			r := condition(d, meta.ReadyCondition)
			said := []string{r.Message}
			for _, e := range d.Events {
				said = append(said, e.Reason+": "+e.Message)
			}
			if r.Reason != tc.wantReason || !strings.Contains(strings.Join(said, "\n"), tc.wantSays) {
				t.Errorf("Ready %s, said:\n%s\nwant %s saying %q", r.Reason, strings.Join(said, "\n"), tc.wantReason, tc.wantSays)
			}
		})
	}
}
