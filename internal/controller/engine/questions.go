package engine

import (
	"context"

	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// maxQuestions bounds the decisions one look makes: each asks at most one question (the freezes,
// the image, its signature, the build times, the slots), and each is answered once.
const maxQuestions = 5

// decide lets rollout.Decide choose, answers what the decision needs first (Decision.Needs), and
// decides again with the answers, until it needs nothing it was not told.
func (r *RollingUpgradeConfigReconciler) decide(ctx context.Context, in rollout.Input, w *kube.Workload) rollout.Decision {
	d := rollout.Decide(in)
	for range maxQuestions {
		if !r.answer(ctx, &in, w, d.Needs) {
			return d
		}
		d = rollout.Decide(in)
	}
	return d
}

// answer puts into in the answer to the first question not answered yet, and reports whether
// there was one. One at a time: an answer may change what the decision asks next, and a claim of
// calendar slots is a write that only a version about to start may make.
func (r *RollingUpgradeConfigReconciler) answer(ctx context.Context, in *rollout.Input, w *kube.Workload, questions []rollout.Question) bool {
	for _, q := range questions {
		switch q := q.(type) {
		case rollout.BuildTimes:
			if in.Created == nil && w != nil {
				in.Created = r.readCreated(ctx, *in, w, q.Tags)
				return true
			}
		case rollout.Freezes:
			if in.Freezes == nil {
				in.Freezes = r.askFreezes(ctx, *in)
				return true
			}
		case rollout.ImageLookUp:
			if in.Image == nil && w != nil {
				in.Image = r.lookUp(ctx, *in, w, q.Image)
				return true
			}
		case rollout.SignatureCheck:
			if in.Signature == nil && w != nil {
				in.Signature = r.checkSignature(ctx, *in, w, q.Image)
				return true
			}
		case rollout.Slots:
			if in.Slots == nil {
				in.Slots = r.claimSlots(ctx, *in, q.Tag)
				return true
			}
		}
	}
	return false
}

// registry reads tags and digests with the workload's pull credentials.
func (r *RollingUpgradeConfigReconciler) registry() registrySource {
	return registrySource{cache: r.Tags, reader: r.APIReader, cloud: r.CloudIdentity}
}

// askFreezes answers the freezeWhile queries of the config's calendars.
func (r *RollingUpgradeConfigReconciler) askFreezes(ctx context.Context, in rollout.Input) map[string]rollout.FreezeAnswer {
	out := map[string]rollout.FreezeAnswer{}
	if !r.Waits.take() {
		for _, cal := range in.Calendars {
			for _, q := range cal.Spec.FreezeWhile {
				out[cal.Name+"/"+q.Name] = rollout.FreezeAnswer{Problem: allWaiting}
			}
		}
		return out
	}
	defer r.Waits.give()
	for _, cal := range in.Calendars {
		for _, q := range cal.Spec.FreezeWhile {
			a := rollout.FreezeAnswer{Problem: errNoPrometheus}
			if r.Metrics != nil {
				n, err := r.Metrics.Series(ctx, q.Query, in.Now)
				a = rollout.FreezeAnswer{Series: n}
				if err != nil {
					a.Problem = err.Error()
				}
			}
			out[cal.Name+"/"+q.Name] = a
		}
	}
	return out
}

// lookUp asks the registry about img, within a wait slot.
func (r *RollingUpgradeConfigReconciler) lookUp(ctx context.Context, in rollout.Input, w *kube.Workload, img string) *rollout.ImageLookup {
	if !r.Waits.take() {
		return &rollout.ImageLookup{Image: img, Problem: "not looked up: " + allWaiting}
	}
	defer r.Waits.give()
	return r.registry().lookUp(ctx, in.Config, w.PodSpec(), img)
}

// checkSignature checks the signatures of img (spec.verify), within a wait slot.
func (r *RollingUpgradeConfigReconciler) checkSignature(ctx context.Context, in rollout.Input, w *kube.Workload, img string) *rollout.SignatureAnswer {
	if !r.Waits.take() {
		return &rollout.SignatureAnswer{Image: img, Problem: "not checked: " + allWaiting}
	}
	defer r.Waits.give()
	return r.registry().signature(ctx, in.Config, w.PodSpec(), img)
}

// readCreated asks the registry for the build times of the images of tags, within a wait slot.
func (r *RollingUpgradeConfigReconciler) readCreated(ctx context.Context, in rollout.Input, w *kube.Workload, tags []string) map[string]rollout.CreatedAnswer {
	if !r.Waits.take() {
		out := map[string]rollout.CreatedAnswer{}
		for _, tag := range tags {
			out[tag] = rollout.CreatedAnswer{Problem: "not read: " + allWaiting}
		}
		return out
	}
	defer r.Waits.give()
	return r.registry().created(ctx, in.Config, w.PodSpec(), tags)
}
