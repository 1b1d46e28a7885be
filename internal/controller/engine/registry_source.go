package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	k8schain "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/registry"
	"github.com/rollgate/rollgate/internal/rollout"
	"github.com/rollgate/rollgate/internal/signature"
)

// registrySource reads the tags of spec.image through the shared cache, with the credentials the
// workload's pods would pull with: its imagePullSecrets and those of its service account. Secrets
// and service accounts are read uncached; the manager does not watch them.
type registrySource struct {
	cache  *registry.Cache
	reader client.Reader
	cloud  authn.Keychain // the manager's cloud identity, after the pull secrets; nil: none
}

// candidates lists the tags, or under spec.followTag resolves the followed tag's digest, and says
// when to look again.
func (s registrySource) candidates(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, pod *corev1.PodSpec,
	src v1alpha1.RegistrySource, now time.Time) ([]rollout.Candidate, *rollout.Problem, time.Duration, error) {
	keychain, secrets, err := s.keychain(ctx, ruc.Namespace, pod)
	if err != nil {
		return nil, nil, 0, err
	}
	interval := v1alpha1.DefaultRegistryInterval
	if src.Interval != nil {
		interval = src.Interval.Duration
	}
	// Answers are shared by repository (or followed tag); credentials are part of the key, so that
	// no config sees tags through another namespace's secrets.
	creds := ""
	if len(secrets) > 0 {
		creds = "|" + ruc.Namespace + "/" + strings.Join(secrets, ",")
	}
	var res registry.Result
	asked := "listing the tags of " + ruc.Spec.Image
	if tag := ruc.Spec.FollowTag; tag != "" {
		img := ruc.Spec.Image + ":" + tag
		asked = "resolving " + img
		if res = s.cache.Digest(ctx, "digest of "+img+creds, img, interval, keychain); res.Err == nil {
			res.Tags = []string{tag + "@" + res.Digest}
		}
	} else {
		res = s.cache.Tags(ctx, ruc.Spec.Image+creds, ruc.Spec.Image, interval, keychain)
	}
	poll := max(res.Next.Sub(now), time.Second)
	if res.Err != nil {
		// The message says what failed in rollgate's words; the registry's own are for the log.
		logf.FromContext(ctx).V(1).Info(asked+" failed", "image", ruc.Spec.Image, "detail", errors.Unwrap(res.Err))
		return nil, &rollout.Problem{Reason: v1alpha1.EventRegistryUnavailable, Message: asked + ": " + s.problem(res.Err, ruc.Spec.Image)}, poll, nil
	}
	out := make([]rollout.Candidate, 0, len(res.Tags))
	for _, t := range res.Tags {
		out = append(out, rollout.Candidate{Tag: t, Source: "registry"})
	}
	return out, nil, poll, nil
}

// lookUp asks the registry for the digest of img with the workload's pull credentials. The
// answer's problem is in rollgate's words (registry.Error): the registry's own are for the log.
func (s registrySource) lookUp(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, pod *corev1.PodSpec, img string) *rollout.ImageLookup {
	l := &rollout.ImageLookup{Image: img}
	resolver, keychain, problem := clientFor[registry.DigestResolver](ctx, s, ruc, pod)
	if problem != "" {
		l.Problem = problem
		return l
	}
	var err error
	l.Digest, err = resolver.Digest(ctx, img, keychain)
	switch {
	case errors.Is(err, registry.ErrImageNotFound):
		l.NotFound = true
	case err != nil:
		logf.FromContext(ctx).V(1).Info("looking up an image failed", "image", img, "detail", errors.Unwrap(err))
		l.Problem = s.problem(err, img)
	}
	return l
}

// created reads the build times of the config's images of tags, with the workload's pull
// credentials (read once for all of them).
func (s registrySource) created(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, pod *corev1.PodSpec, tags []string) map[string]rollout.CreatedAnswer {
	out := make(map[string]rollout.CreatedAnswer, len(tags))
	reader, keychain, problem := clientFor[registry.CreationReader](ctx, s, ruc, pod)
	for _, tag := range tags {
		if problem != "" {
			out[tag] = rollout.CreatedAnswer{Problem: problem}
			continue
		}
		img := ruc.Spec.Image + ":" + tag
		at, err := reader.Created(ctx, img, keychain)
		if err != nil {
			logf.FromContext(ctx).V(1).Info("reading the build time of an image failed", "image", img, "detail", errors.Unwrap(err))
			out[tag] = rollout.CreatedAnswer{Problem: s.problem(err, img)}
			continue
		}
		out[tag] = rollout.CreatedAnswer{At: at}
	}
	return out
}

// problem is err, a failed read of img, in rollgate's words. A registry that refused access under
// the manager's cloud identity may have refused that identity, not the pull secrets the message
// names: it names the identity too.
func (s registrySource) problem(err error, img string) string {
	var re *registry.Error
	if s.cloud == nil || !errors.As(err, &re) || (re.StatusCode != http.StatusUnauthorized && re.StatusCode != http.StatusForbidden) {
		return err.Error()
	}
	ref, perr := name.ParseReference(img, name.WeakValidation)
	if perr != nil {
		return err.Error()
	}
	cloud, ok := registry.CloudOf(ref.Context().RegistryStr())
	if !ok {
		return err.Error()
	}
	return fmt.Sprintf("%v, or what the manager's %s identity may read (its log says whether it got a credential)", err, cloud)
}

// clientFor is the manager's registry client as a C, with the workload's pull credentials, or
// why there are none.
func clientFor[C any](ctx context.Context, s registrySource, ruc *v1alpha1.RollingUpgradeConfig, pod *corev1.PodSpec) (C, authn.Keychain, string) {
	var c C
	ok := false
	if s.cache != nil {
		c, ok = s.cache.Lister.(C)
	}
	if !ok {
		return c, nil, "the manager's registry client cannot look images up"
	}
	keychain, _, err := s.keychain(ctx, ruc.Namespace, pod)
	if err != nil {
		return c, nil, "reading the workload's pull secrets: " + err.Error()
	}
	return c, keychain, ""
}

// keychain gathers the pull secrets of the pod spec and its service account, and the manager's
// cloud identity after them. The names are the secrets'.
func (s registrySource) keychain(ctx context.Context, namespace string, pod *corev1.PodSpec) (authn.Keychain, []string, error) {
	var names []string
	if pod != nil {
		for _, r := range pod.ImagePullSecrets {
			names = append(names, r.Name)
		}
		saName := pod.ServiceAccountName
		if saName == "" {
			saName = "default"
		}
		var sa corev1.ServiceAccount
		switch err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: saName}, &sa); {
		case err == nil:
			for _, r := range sa.ImagePullSecrets {
				names = append(names, r.Name)
			}
		case !apierrors.IsNotFound(err):
			return nil, nil, err
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var secrets []corev1.Secret
	for _, n := range names {
		var sec corev1.Secret
		if err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the kubelet skips a missing pull secret too
			}
			return nil, nil, err
		}
		secrets = append(secrets, sec)
	}
	var chain []authn.Keychain
	if len(secrets) > 0 {
		kc, err := k8schain.NewFromPullSecrets(ctx, secrets)
		if err != nil {
			return nil, nil, err
		}
		chain = append(chain, kc)
	} else {
		names = nil // none found: the listing is an anonymous one, shared as such
	}
	if s.cloud != nil {
		chain = append(chain, s.cloud)
	}
	return authn.NewMultiKeychain(chain...), names, nil // an empty chain is anonymous
}

// signature checks the cosign signatures of img (repo:tag@digest) against the public key or the
// keyless identity of spec.verify, with the workload's pull credentials.
func (s registrySource) signature(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, pod *corev1.PodSpec, img string) *rollout.SignatureAnswer {
	a := &rollout.SignatureAnswer{Image: img}
	check, source, problem := s.signatureCheck(ctx, ruc.Namespace, ruc.Spec.Verify.Cosign)
	if problem != "" {
		a.Problem = problem
		return a
	}
	reader, keychain, problem := clientFor[registry.SignatureReader](ctx, s, ruc, pod)
	if problem != "" {
		a.Problem = problem
		return a
	}
	sigs, err := reader.CosignSignatures(ctx, img, keychain)
	if err != nil {
		logf.FromContext(ctx).V(1).Info("reading the signatures of an image failed", "image", img, "detail", errors.Unwrap(err))
		a.Problem = s.problem(err, img)
		return a
	}
	signed := make([]signature.Signed, 0, len(sigs))
	for _, sg := range sigs {
		signed = append(signed, signature.Signed(sg))
	}
	switch err := check(image.Digest(img), signed); {
	case err == nil:
		a.Signed = true
	case errors.Is(err, signature.ErrNoSignature), errors.Is(err, signature.ErrNotByTheKey), errors.Is(err, signature.ErrNotByTheIdentity):
		a.Unsigned = err.Error()
	default:
		a.Problem = source + ": " + err.Error()
	}
	return a
}

// signatureCheck is the check of spec.verify.cosign: with the public key of its Secret, or keyless
// with the trusted root of its ConfigMap, each read uncached (the manager watches neither).
// source names what the check was made with; problem says why it cannot be read.
func (s registrySource) signatureCheck(ctx context.Context, ns string, cosign *v1alpha1.CosignVerify) (check func(digest string, sigs []signature.Signed) error, source, problem string) {
	if k := cosign.Keyless; k != nil {
		ref := k.TrustedRootRef
		key := cmp.Or(ref.Key, v1alpha1.DefaultTrustedRootKey)
		var cm corev1.ConfigMap
		if problem := s.read(ctx, ns, "ConfigMap", ref.Name, &cm); problem != "" {
			return nil, "", problem
		}
		root := []byte(cm.Data[key])
		if len(root) == 0 {
			root = cm.BinaryData[key]
		}
		if len(root) == 0 {
			return nil, "", fmt.Sprintf("ConfigMap %s has no key %s", ref.Name, key)
		}
		id := signature.Identity{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp}
		keyless := func(digest string, sigs []signature.Signed) error {
			return signature.VerifyKeyless(root, id, digest, sigs)
		}
		return keyless, fmt.Sprintf("ConfigMap %s key %s", ref.Name, key), ""
	}
	ref := cosign.PublicKeySecretRef
	if ref == nil { // the API server requires one of the two, and the decision stalls without
		return nil, "", "spec.verify.cosign names no signer"
	}
	key := cmp.Or(ref.Key, v1alpha1.DefaultPublicKeyKey)
	var sec corev1.Secret
	if problem := s.read(ctx, ns, "Secret", ref.Name, &sec); problem != "" {
		return nil, "", problem
	}
	if len(sec.Data[key]) == 0 {
		return nil, "", fmt.Sprintf("Secret %s has no key %s", ref.Name, key)
	}
	byKey := func(digest string, sigs []signature.Signed) error {
		return signature.Verify(sec.Data[key], digest, sigs)
	}
	return byKey, fmt.Sprintf("Secret %s key %s", ref.Name, key), ""
}

// read gets the object kind/name of namespace ns uncached; problem says why it cannot.
func (s registrySource) read(ctx context.Context, ns, kind, name string, obj client.Object) (problem string) {
	switch err := s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s %s not found", kind, name)
	case err != nil:
		return "reading " + kind + " " + name + ": " + err.Error()
	}
	return ""
}
