package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/registry"
)

// cloudOf answers for one registry host, as registry.CloudIdentity does for a cloud's.
type cloudOf string

func (c cloudOf) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() != string(c) {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{Username: "cloud", Password: "identity"}), nil
}

// The workload's pull secrets come first; the manager's cloud identity answers for what they do
// not; without either a registry is read anonymously.
func TestPullSecretsThenTheCloudIdentity(t *testing.T) {
	docker, _ := json.Marshal(map[string]any{"auths": map[string]any{"ghcr.io": map[string]string{"username": "bot", "password": "pat"}}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "ghcr"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: docker}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(secret).Build()
	pod := &corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "ghcr"}}}
	const ecr = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
	for _, tc := range []struct {
		name  string
		cloud authn.Keychain
		pod   *corev1.PodSpec
		host  string
		want  string // username
	}{
		{"a pull secret for the host", cloudOf(ecr), pod, "ghcr.io", "bot"},
		{"the cloud identity for a host no secret names", cloudOf(ecr), pod, ecr, "cloud"},
		{"the cloud identity without pull secrets", cloudOf(ecr), nil, ecr, "cloud"},
		{"anonymous without a cloud identity", nil, pod, ecr, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, _, err := registrySource{reader: c, cloud: tc.cloud}.keychain(context.Background(), "shop", tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			reg, _ := name.NewRegistry(tc.host)
			auth, err := kc.Resolve(reg)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := auth.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Username != tc.want {
				t.Errorf("user %q, want %q", cfg.Username, tc.want)
			}
		})
	}
}

// A registry of a cloud that refuses access under the manager's cloud identity may have refused
// that identity, not only the pull secrets: the message names both. Other failures, other hosts,
// and a manager without the identity say what they said.
func TestARefusalNamesTheCloudIdentity(t *testing.T) {
	refused := &registry.Error{StatusCode: http.StatusUnauthorized}
	const secrets = "registry refused access (401): check the workload's imagePullSecrets or service account"
	cases := []struct {
		name  string
		cloud authn.Keychain
		err   error
		img   string
		want  string
	}{
		{"an Azure registry", cloudOf("x"), refused, "acme.azurecr.io/web:1.0.0",
			secrets + ", or what the manager's Azure identity may read (its log says whether it got a credential)"},
		{"ECR, forbidden", cloudOf("x"), &registry.Error{StatusCode: http.StatusForbidden}, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/web@sha256:" + strings.Repeat("a", 64),
			"registry refused access (403): check the workload's imagePullSecrets or service account, or what the manager's AWS identity may read (its log says whether it got a credential)"},
		{"a registry of no cloud", cloudOf("x"), refused, "ghcr.io/acme/web:1.0.0", secrets},
		{"without the cloud identity", nil, refused, "acme.azurecr.io/web:1.0.0", secrets},
		{"another failure", cloudOf("x"), &registry.Error{StatusCode: http.StatusTooManyRequests}, "acme.azurecr.io/web:1.0.0", "registry rate limit (429)"},
		{"no registry answer at all", cloudOf("x"), errors.New("the manager's registry client cannot look images up"), "acme.azurecr.io/web:1.0.0",
			"the manager's registry client cannot look images up"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (registrySource{cloud: tc.cloud}).problem(tc.err, tc.img); got != tc.want {
				t.Errorf("problem\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
