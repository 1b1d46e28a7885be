package engine

import (
	"context"
	"fmt"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/rollout"
)

// imagePolicyKind is Flux's ImagePolicy, which image-reflector-controller serves when it is
// installed.
var imagePolicyKind = schema.GroupKind{Group: imagev1.GroupVersion.Group, Kind: "ImagePolicy"}

// imagePoliciesServed says whether the cluster serves ImagePolicy: only then does the manager watch
// them. A cluster without Flux's image automation is no error; a config that names an ImagePolicy
// there stalls with what to do.
func imagePoliciesServed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(imagePolicyKind, imagev1.GroupVersion.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// fromImagePolicy reads the image a Flux ImagePolicy chose (status.latestRef): its tag, or under
// spec.followTag the tag and its digest, tag@sha256:…. served says whether the manager watches
// ImagePolicies (the cluster served them at its start, and --image-policies is on).
func fromImagePolicy(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig, name string, served bool) ([]rollout.Candidate, *rollout.Problem, error) {
	invalid := func(format string, args ...any) *rollout.Problem {
		return &rollout.Problem{Reason: v1alpha1.EventInvalidSpec, Terminal: true, Message: fmt.Sprintf("ImagePolicy %s ", name) + fmt.Sprintf(format, args...)}
	}
	if !served {
		return nil, &rollout.Problem{Reason: v1alpha1.EventSourceNotFound, Terminal: true, Message: fmt.Sprintf(
			"ImagePolicy %s: rollgate does not read ImagePolicies: the cluster did not serve %s/%s ImagePolicy when it started, or its "+
				"--image-policies is off; install Flux's image-reflector-controller (or turn the flag on), then restart rollgate",
			name, imagev1.GroupVersion.Group, imagev1.GroupVersion.Version)}, nil
	}
	var ip imagev1.ImagePolicy
	if err := c.Get(ctx, client.ObjectKey{Namespace: ruc.Namespace, Name: name}, &ip); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &rollout.Problem{Reason: v1alpha1.EventSourceNotFound, Message: fmt.Sprintf("ImagePolicy %s not found", name)}, nil
		}
		return nil, nil, err
	}
	ref := ip.Status.LatestRef
	if ref == nil {
		return nil, &rollout.Problem{Reason: v1alpha1.EventSourceNotFound, Message: fmt.Sprintf(
			"ImagePolicy %s has chosen no image yet (status.latestRef is empty)", name)}, nil
	}
	follow := ruc.Spec.FollowTag
	switch {
	case !image.SameRepositoryName(ref.Name, ruc.Spec.Image):
		return nil, invalid("chose an image of %s, but this config manages %s", ref.Name, ruc.Spec.Image), nil
	case !image.IsTag(ref.Tag):
		return nil, invalid("chose %q, which is not an image tag", ref.Tag), nil
	case follow != "" && ref.Tag != follow:
		return nil, invalid("chose the tag %s, but this config follows %s", ref.Tag, follow), nil
	case follow != "" && ref.Digest == "":
		return nil, invalid("reflects no digest of %s: set its spec.digestReflectionPolicy to Always", follow), nil
	case follow != "" && ip.GetDigestReflectionPolicy() != imagev1.ReflectAlways:
		// IfNotPresent keeps the first digest while the tag stays: its moves would go unseen.
		return nil, invalid("reflects the digest of %s only once: set its spec.digestReflectionPolicy to Always", follow), nil
	}
	tag := ref.Tag
	if follow != "" {
		tag += "@" + ref.Digest
	}
	return []rollout.Candidate{{Tag: tag, Source: "ImagePolicy/" + name}}, nil, nil
}
