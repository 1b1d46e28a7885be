package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/rollout"
)

// gatherCandidates reads every source of the config into in. The first source that cannot be read
// stops it: a config must not act on part of its signals. Registry sources also set in.PollAfter.
// imagePolicies says whether the manager watches Flux's ImagePolicies.
func gatherCandidates(ctx context.Context, c client.Reader, reg registrySource, imagePolicies bool, ruc *v1alpha1.RollingUpgradeConfig,
	pod *corev1.PodSpec, in *rollout.Input) error {
	for _, src := range ruc.Spec.Sources {
		var got []rollout.Candidate
		var problem *rollout.Problem
		var err error
		switch {
		case src.ApplicationVersion != nil:
			got, problem, err = fromApplicationVersion(ctx, c, ruc, src.ApplicationVersion.Name)
		case src.ConfigMap != nil:
			got, problem, err = fromConfigMap(ctx, c, ruc.Namespace, *src.ConfigMap)
		case src.ImagePolicy != nil:
			got, problem, err = fromImagePolicy(ctx, c, ruc, src.ImagePolicy.Name, imagePolicies)
		case src.Registry != nil:
			var poll time.Duration
			got, problem, poll, err = reg.candidates(ctx, ruc, pod, *src.Registry, in.Now)
			if in.PollAfter == 0 || poll < in.PollAfter {
				in.PollAfter = poll
			}
		}
		if err != nil {
			return err
		}
		if problem != nil {
			in.Candidates, in.SourceProblem = nil, problem
			return nil
		}
		in.Candidates = append(in.Candidates, got...)
	}
	return nil
}

func fromApplicationVersion(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig, name string) ([]rollout.Candidate, *rollout.Problem, error) {
	var av v1alpha1.ApplicationVersion
	if err := c.Get(ctx, client.ObjectKey{Namespace: ruc.Namespace, Name: name}, &av); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &rollout.Problem{Reason: v1alpha1.EventSourceNotFound, Message: fmt.Sprintf("ApplicationVersion %s not found", name)}, nil
		}
		return nil, nil, err
	}
	if !image.SameRepositoryName(av.Spec.Image, ruc.Spec.Image) {
		return nil, &rollout.Problem{Reason: v1alpha1.EventInvalidSpec, Terminal: true, Message: fmt.Sprintf(
			"ApplicationVersion %s announces image %s, but this config manages %s", name, av.Spec.Image, ruc.Spec.Image)}, nil
	}
	if !image.IsTag(av.Spec.Version) {
		// Semver with build metadata (1.4.0+build.5) reads as a version but names no image.
		return nil, &rollout.Problem{Reason: v1alpha1.EventInvalidSpec, Terminal: true, Message: fmt.Sprintf(
			"ApplicationVersion %s announces %q, which is not an image tag (letters, digits, '_', '.' and '-' only)", name, av.Spec.Version)}, nil
	}
	cand := rollout.Candidate{Tag: av.Spec.Version, Source: "ApplicationVersion/" + name}
	if av.Spec.ReleasedAt != nil {
		cand.ReleasedAt = av.Spec.ReleasedAt.Time
	}
	return []rollout.Candidate{cand}, nil, nil
}

func fromConfigMap(ctx context.Context, c client.Reader, namespace string, src v1alpha1.ConfigMapSource) ([]rollout.Candidate, *rollout.Problem, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: src.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &rollout.Problem{Reason: v1alpha1.EventSourceNotFound, Message: fmt.Sprintf(
				"ConfigMap %s not found, or not labelled %s=true (no other ConfigMap is read)", src.Name, v1alpha1.VersionSourceLabel)}, nil
		}
		return nil, nil, err
	}
	value, ok := cm.Data[src.Key]
	if !ok {
		return nil, &rollout.Problem{Reason: v1alpha1.EventInvalidSpec, Terminal: true, Message: fmt.Sprintf("ConfigMap %s has no key %q", src.Name, src.Key)}, nil
	}
	tags, err := parseVersionList(value)
	if err != nil {
		return nil, &rollout.Problem{Reason: v1alpha1.EventInvalidSpec, Terminal: true, Message: fmt.Sprintf("ConfigMap %s key %q: %v", src.Name, src.Key, err)}, nil
	}
	out := make([]rollout.Candidate, 0, len(tags))
	for _, t := range tags {
		out = append(out, rollout.Candidate{Tag: t, Source: fmt.Sprintf("ConfigMap/%s[%s]", src.Name, src.Key)})
	}
	return out, nil, nil
}

// parseVersionList reads "1.2.0" or "1.2.0, 1.3.0"; every entry must at least be an image tag.
func parseVersionList(value string) ([]string, error) {
	var tags []string
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		// A value that is not even a tag is garbage; a tag that is not semver (latest) is a
		// candidate the policy ignores with a visible reason.
		if !image.IsTag(part) {
			if len(part) > 40 {
				part = part[:40] + "…"
			}
			return nil, fmt.Errorf("%q is not an image tag; the value must be one version or a comma-separated list", part)
		}
		tags = append(tags, part)
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("the value is empty; it must be one version or a comma-separated list")
	}
	return tags, nil
}
