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
)

// signedRegistry resolves every image to one digest and holds one signature, by no key the tests
// give.
type signedRegistry struct{}

func (signedRegistry) ListTags(context.Context, string, authn.Keychain) ([]string, error) {
	return nil, nil
}
func (signedRegistry) Digest(context.Context, string, authn.Keychain) (string, error) {
	return "sha256:" + strings.Repeat("b", 64), nil
}
func (signedRegistry) CosignSignatures(context.Context, string, authn.Keychain) ([]registry.CosignSignature, error) {
	return []registry.CosignSignature{{Payload: []byte(`{}`), Signature: "c2ln"}}, nil
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
	objs := kubetest.Objects()
	for _, o := range objs {
		if ruc, ok := o.(*v1alpha1.RollingUpgradeConfig); ok {
			ruc.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{PublicKeySecretRef: v1alpha1.SecretKeyReference{Name: "cosign"}}}
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cosign"}, Data: map[string][]byte{"cosign.pub": pub}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(append(objs, secret)...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &appsv1.Deployment{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).Build()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	rec := events.NewFakeRecorder(100)
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: rec, Clock: clock,
		Tags: &registry.Cache{Lister: signedRegistry{}, Clock: clock}, Waits: NewWaitSlots(4)}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}}
	for range 3 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		clock.SetTime(clock.Now().Add(time.Minute))
	}
	close(rec.Events)
	var unsigned, all []string
	for e := range rec.Events {
		all = append(all, e)
		if strings.Contains(e, " Unsigned ") {
			unsigned = append(unsigned, e)
		}
	}
	if len(unsigned) != 1 {
		t.Errorf("%d Unsigned events, want 1: %q", len(unsigned), all)
	}
}
