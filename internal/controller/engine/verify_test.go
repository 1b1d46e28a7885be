package engine

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/registry"
	"github.com/rollgate/rollgate/internal/signature/sigstoretest"
)

// signedDigest is the digest signedRegistry resolves every image to.
var signedDigest = "sha256:" + strings.Repeat("b", 64)

// signedRegistry resolves every image to signedDigest and holds sigs for it.
type signedRegistry struct{ sigs []registry.CosignSignature }

func (signedRegistry) ListTags(context.Context, string, authn.Keychain) ([]string, error) {
	return nil, nil
}
func (signedRegistry) Digest(context.Context, string, authn.Keychain) (string, error) {
	return signedDigest, nil
}
func (r signedRegistry) CosignSignatures(context.Context, string, authn.Keychain) ([]registry.CosignSignature, error) {
	return r.sigs, nil
}

// verifying reconciles the config shop/web of kubetest, which checks signatures as v says, n
// times a minute apart, with objs beside kubetest's and reg as the registry. It returns the
// events sent and the config as it ends.
func verifying(t *testing.T, v *v1alpha1.Verify, reg signedRegistry, n int, objs ...client.Object) ([]string, *v1alpha1.RollingUpgradeConfig) {
	t.Helper()
	for _, o := range kubetest.Objects() {
		if ruc, ok := o.(*v1alpha1.RollingUpgradeConfig); ok {
			ruc.Spec.Verify = v
		}
		objs = append(objs, o)
	}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &appsv1.Deployment{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).Build()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	rec := events.NewFakeRecorder(100)
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: rec, Clock: clock,
		Tags: &registry.Cache{Lister: reg, Clock: clock}, Waits: NewWaitSlots(4)}
	key := client.ObjectKey{Namespace: "shop", Name: "web"}
	for range n {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		clock.SetTime(clock.Now().Add(time.Minute))
	}
	close(rec.Events)
	var sent []string
	for e := range rec.Events {
		sent = append(sent, e)
	}
	var ruc v1alpha1.RollingUpgradeConfig
	if err := c.Get(context.Background(), key, &ruc); err != nil {
		t.Fatal(err)
	}
	return sent, &ruc
}

// An image that stays unsigned says so in one Warning, however often it is looked at again.
func TestAnUnsignedImageWarnsOnceThroughReconcile(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cosign"}, Data: map[string][]byte{"cosign.pub": pub}}
	reg := signedRegistry{sigs: []registry.CosignSignature{{Payload: []byte(`{}`), Signature: "c2ln"}}}
	all, _ := verifying(t, &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{PublicKeySecretRef: &v1alpha1.SecretKeyReference{Name: "cosign"}}}, reg, 3, secret)
	var unsigned []string
	for _, e := range all {
		if strings.Contains(e, " Unsigned ") {
			unsigned = append(unsigned, e)
		}
	}
	if len(unsigned) != 1 {
		t.Errorf("%d Unsigned events, want 1: %q", len(unsigned), all)
	}
}

// A keyless signature is checked against the trusted root of the ConfigMap spec.verify names: one
// by the identity starts the version, pinned; one by another identity holds it; a trusted root
// that cannot be read holds it without a verdict.
func TestKeylessSignaturesThroughReconcile(t *testing.T) {
	const issuer, workflow = "https://token.actions.githubusercontent.com", "https://github.com/acme/web/.github/workflows/release.yaml@refs/heads/main"
	store := sigstoretest.New(t)
	payload := sigstoretest.SimpleSigning("ghcr.io/acme/web", signedDigest)
	now := time.Now().Add(-time.Hour)
	signedBy := func(subject string) signedRegistry {
		s := store.Sign(t, payload, sigstoretest.Keyless{Subject: subject, Issuer: issuer, Issued: now, Logged: now})
		return signedRegistry{sigs: []registry.CosignSignature{registry.CosignSignature(s)}}
	}
	root := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "sigstore"}, Data: map[string]string{"trusted_root.json": string(store.TrustedRoot)}}
	verify := &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{Keyless: &v1alpha1.CosignKeyless{
		Issuer: issuer, Subject: workflow, TrustedRootRef: v1alpha1.ConfigMapKeyReference{Name: "sigstore"}}}}
	cases := []struct {
		name string
		reg  signedRegistry
		objs []client.Object
		// expected
		wantTarget, wantEvent string
	}{
		{name: "by the identity", reg: signedBy(workflow), objs: []client.Object{root},
			wantTarget: "ghcr.io/acme/web:1.1.0@" + signedDigest, wantEvent: "UpdateStarting"},
		{name: "by another identity", reg: signedBy("https://github.com/mallory/web/.github/workflows/release.yaml@refs/heads/main"), objs: []client.Object{root},
			wantEvent: "Unsigned ghcr.io/acme/web:1.1.0@" + signedDigest + " is not signed by " + workflow + " of " + issuer +
				" (spec.verify.cosign.keyless): none of its cosign signatures is by the identity: failed to verify certificate identity"},
		{name: "no trusted root", reg: signedBy(workflow),
			wantEvent: "RegistryUnavailable checking the signatures of ghcr.io/acme/web:1.1.0@" + signedDigest + " (spec.verify): ConfigMap sigstore not found"},
		{name: "a trusted root that is not one", reg: signedBy(workflow),
			objs: []client.Object{&corev1.ConfigMap{ObjectMeta: root.ObjectMeta, Data: map[string]string{"trusted_root.json": "{"}}},
			wantEvent: "RegistryUnavailable checking the signatures of ghcr.io/acme/web:1.1.0@" + signedDigest +
				" (spec.verify): ConfigMap sigstore key trusted_root.json: the trusted root: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sent, ruc := verifying(t, verify, tc.reg, 1, tc.objs...)
			if got := ruc.Annotations[v1alpha1.TargetImageAnnotation]; got != tc.wantTarget {
				t.Errorf("target %q, want %q", got, tc.wantTarget)
			}
			if !strings.Contains(strings.Join(sent, "\n"), tc.wantEvent) {
				t.Errorf("events:\n%s\nwant one with %q", strings.Join(sent, "\n"), tc.wantEvent)
			}
		})
	}
}
