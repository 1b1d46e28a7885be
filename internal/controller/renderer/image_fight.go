package renderer

import (
	"strconv"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/kube"
)

// The renderer's decision, apart from its I/O: from what the workload runs and what rollgate last
// rendered into it, whether to render and what revert record to write.
//
// A revert is another field manager changing back the image rollgate rendered. Reverts are counted
// since rollgate last rendered a new image, however far apart they come: a GitOps tool that syncs
// every two hours is a fight as much as one that syncs every minute. The count starts anew only
// when rollgate renders a target other than the one it rendered last, or when a person removes the
// rollgate.dev/reverts annotation.

// renderFacts is what the renderer knows of a config and its workload.
type renderFacts struct {
	Config     string      // name of the config rendering
	Want       string      // target image
	Running    string      // image of the managed container, or of the one of several not running Want
	LastImage  string      // rollgate.dev/last-image: the image rollgate last rendered
	LastConfig string      // rollgate.dev/last-updated-by: the config that rendered it
	Fight      revertState // the revert record in the workload's annotations
	Owners     []string    // field managers owning that container's image (ImageOwners)
	// Deleting: the config is being deleted. The renderer then only puts back an image the
	// workload does not run; recording it would take back what the deletion gave up.
	Deleting bool
	// StandIn: the render stands in for what Git cannot say, or the GitOps tool does not apply
	// (GitFirst; rollout.StandInSince), since StandInSince. The GitOps tool putting Git's image
	// back over it is a fight like any other, bounded the same way, but only the reverts of this
	// stand-in count: those of one before ended with it.
	StandIn      bool
	StandInSince time.Time
}

// renderDecision is what the renderer does.
type renderDecision struct {
	Render bool        // apply Want with rollgate's annotations
	Fight  revertState // the revert record to write with it
	Reason string      // for the log; empty when there is nothing to do
}

// revertState is the fight with another field manager, kept in the workload's annotations.
type revertState struct {
	count int    // reverts since rollgate last rendered a new image
	by    string // the field manager that made the last one
	at    string // RFC 3339 time the last one was seen; for people, nothing is computed from it
}

// revertStateOf reads the revert record of a workload.
func revertStateOf(annotations map[string]string) revertState {
	return revertState{
		count: kube.Reverts(annotations),
		by:    annotations[v1alpha1.RevertedByAnnotation],
		at:    annotations[v1alpha1.RevertedAtAnnotation],
	}
}

// annotations are the revert record as workload annotations; none when there was no revert.
func (s revertState) annotations() map[string]string {
	if s.count <= 0 {
		return nil
	}
	return map[string]string{
		v1alpha1.RevertsAnnotation:    strconv.Itoa(s.count),
		v1alpha1.RevertedByAnnotation: s.by,
		v1alpha1.RevertedAtAnnotation: s.at,
	}
}

// decideRender decides whether to render in.Want into the workload, and with which revert record.
// now is the time a revert is recorded at.
func decideRender(in renderFacts, now time.Time) renderDecision {
	switch {
	case in.Deleting && in.LastConfig != in.Config:
		// Released (releaseWorkload removed rollgate's annotations): the image is no longer ours.
		return renderDecision{Fight: in.Fight}
	case image.Renders(in.Running, in.Want):
		// Also when an admission webhook appended a digest: not a revert, nothing to put back.
		if (in.LastImage == in.Want && in.LastConfig == in.Config) || in.Deleting {
			return renderDecision{Fight: in.Fight}
		}
		return renderDecision{Render: true, Fight: in.Fight, Reason: "recording the target the workload runs already"}
	case in.LastImage == in.Want:
		// Rendered before, and changed since.
		other := firstOther(in.Owners)
		if other == "" {
			return renderDecision{Render: true, Fight: in.Fight, Reason: "rendering the image again: changed under rollgate's own field manager"}
		}
		if in.StandIn && in.Fight.seenBefore(in.StandInSince) {
			// Rendered by an earlier stand-in: this one starts with no revert.
			return renderDecision{Render: true, Reason: "rendering the image again: it stands in for Git anew"}
		}
		if in.Fight.count >= v1alpha1.MaxImageReverts {
			return renderDecision{Fight: in.Fight, Reason: "not rendering again: another field manager keeps changing the image back"}
		}
		fight := revertState{count: in.Fight.count + 1, by: other, at: now.UTC().Format(time.RFC3339)}
		return renderDecision{Render: true, Fight: fight, Reason: "rendering the image again: another field manager changed it back"}
	default:
		// A new image: an old fight is over.
		return renderDecision{Render: true, Reason: "rendering a new image"}
	}
}

// seenBefore: the last revert was seen before t (or when is unknown).
func (s revertState) seenBefore(t time.Time) bool {
	at, err := time.Parse(time.RFC3339, s.at)
	return err != nil || at.Before(t.Truncate(time.Second))
}

// firstOther is the first field manager in owners that is not rollgate, or "".
func firstOther(owners []string) string {
	for _, o := range owners {
		if o != v1alpha1.FieldManager {
			return o
		}
	}
	return ""
}
