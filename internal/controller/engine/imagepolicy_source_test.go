package engine

import (
	"context"
	"strings"
	"testing"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// An ImagePolicy's latest image is a candidate: its tag, or under a followed tag the tag and its
// digest. Anything else it says gets a condition that names the policy and what to do.
func TestImagePolicySource(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	policy := func(ref *imagev1.ImageRef) *imagev1.ImagePolicy {
		return &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Status: imagev1.ImagePolicyStatus{LatestRef: ref},
			Spec: imagev1.ImagePolicySpec{DigestReflectionPolicy: imagev1.ReflectAlways}}
	}
	cases := []struct {
		name   string
		policy *imagev1.ImagePolicy // nil: none
		follow string
		served bool
		want   []rollout.Candidate
		// else the problem, its reason, whether it stalls, and a part of its message
		reason   string
		terminal bool
		says     string
	}{
		{name: "the tag the policy chose", served: true, policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "1.4.0", Digest: digest}),
			want: []rollout.Candidate{{Tag: "1.4.0", Source: "ImagePolicy/web"}}},
		{name: "a followed tag and its digest", served: true, follow: "stable", policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "stable", Digest: digest}),
			want: []rollout.Candidate{{Tag: "stable@" + digest, Source: "ImagePolicy/web"}}},
		{name: "no policy of that name", served: true, reason: v1alpha1.EventSourceNotFound, says: "ImagePolicy web not found"},
		{name: "a policy that has chosen nothing yet waits", served: true, policy: policy(nil), reason: v1alpha1.EventSourceNotFound,
			says: "ImagePolicy web has chosen no image yet"},
		{name: "an image of another repository stalls", served: true, policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/api", Tag: "1.4.0"}),
			reason: v1alpha1.EventInvalidSpec, terminal: true, says: "chose an image of ghcr.io/acme/api, but this config manages ghcr.io/acme/web"},
		{name: "another tag than the one followed stalls", served: true, follow: "stable", policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "latest", Digest: digest}),
			reason: v1alpha1.EventInvalidSpec, terminal: true, says: "chose the tag latest, but this config follows stable"},
		{name: "a followed tag whose digest the policy reflects only once stalls", served: true, follow: "stable",
			policy: func() *imagev1.ImagePolicy {
				p := policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "stable", Digest: digest})
				p.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent
				return p
			}(),
			reason: v1alpha1.EventInvalidSpec, terminal: true, says: "reflects the digest of stable only once: set its spec.digestReflectionPolicy to Always"},
		{name: "a followed tag without its digest stalls", served: true, follow: "stable", policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "stable"}),
			reason: v1alpha1.EventInvalidSpec, terminal: true, says: "reflects no digest of stable: set its spec.digestReflectionPolicy to Always"},
		{name: "a cluster without ImagePolicy says what to install", policy: policy(&imagev1.ImageRef{Name: "ghcr.io/acme/web", Tag: "1.4.0"}),
			reason: v1alpha1.EventSourceNotFound, terminal: true, says: "install Flux's image-reflector-controller (or turn the flag on), then restart rollgate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t))
			if tc.policy != nil {
				b = b.WithObjects(tc.policy)
			}
			ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec: v1alpha1.RollingUpgradeConfigSpec{Image: "ghcr.io/acme/web", FollowTag: tc.follow}}
			got, problem, err := fromImagePolicy(context.Background(), b.Build(), ruc, "web", tc.served)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			switch {
			case tc.reason == "" && problem != nil:
				t.Errorf("problem %+v", problem)
			case tc.reason != "" && (problem == nil || problem.Reason != tc.reason || problem.Terminal != tc.terminal || !strings.Contains(problem.Message, tc.says)):
				t.Errorf("problem %+v, want %s (terminal %v) saying %q", problem, tc.reason, tc.terminal, tc.says)
			}
		})
	}
}

// The manager watches ImagePolicies only where the cluster serves them.
func TestImagePoliciesServed(t *testing.T) {
	with := meta.NewDefaultRESTMapper(nil)
	with.Add(schema.GroupVersionKind{Group: "image.toolkit.fluxcd.io", Version: "v1", Kind: "ImagePolicy"}, meta.RESTScopeNamespace)
	if ok, err := imagePoliciesServed(with); !ok || err != nil {
		t.Errorf("served: %v %v", ok, err)
	}
	if ok, err := imagePoliciesServed(meta.NewDefaultRESTMapper(nil)); ok || err != nil {
		t.Errorf("not served: %v %v", ok, err)
	}
}
