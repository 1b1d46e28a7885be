package inplace

import (
	"fmt"
	"time"

	"github.com/rollgate/rollgate/internal/image"
)

// podStep is where one pod the upgrade moves stands, and what it adds to the plan.
type podStep struct {
	Progress
	change  bool          // its image is changed now
	out     bool          // it counts as out of service: taken out, on its way back, or gone
	moving  bool          // draining or changing: its gate stays as it is
	waiting bool          // still to move
	next    time.Duration // look again within this long; 0: nothing to wait for
	unready bool          // evidence against the version past the health timeout
	// Why it stops the upgrade, if it does: gone, without the gate, or failed.
	missing, ungated, failed string
}

// stepOf places the pod at ordinal o (nil: none) in the upgrade.
func stepOf(in Input, o int32, pod *Pod) podStep {
	if pod == nil {
		// Being recreated, maybe after the upgrade took it out: it counts as out of service.
		name := fmt.Sprintf("ordinal %d", o)
		return podStep{Progress: Progress{Name: name, State: StateWaiting}, out: true, missing: name}
	}
	onImage := image.Renders(pod.Image, in.Image)
	// Changed here: rollgate wrote the image into it in this step (not in an earlier rollout):
	// its readiness timeout runs, and its readiness is its change's.
	changedTo := pod.ChangedTo != "" && image.Renders(pod.ChangedTo, in.Image) && !pod.ChangedAt.IsZero()
	changedHere := changedTo && onImage && !pod.ChangedAt.Before(in.Since)
	s := podStep{Progress: Progress{Name: pod.Name, Changed: changedHere, Upgraded: in.Done[pod.Name]}}
	switch {
	case pod.Deleting:
		s.State, s.out, s.missing = StateWaiting, true, pod.Name+" (terminating)"
	case onImage && runs(pod, in.Image) && pod.Ready:
		readyOnImage(&s, pod, changedHere)
	case onImage:
		changing(&s, in, pod, changedTo, changedHere)
	case !pod.Gated:
		s.State, s.ungated = StateWaiting, pod.Name
	case pod.Gate != nil && !*pod.Gate:
		draining(&s, in, pod, changedTo)
	default:
		s.State, s.waiting = StateWaiting, true
		s.out = !pod.InService // down already (a crash loop, say): it counts, and leaves at no cost
	}
	return s
}

// readyOnImage: ready on the image, done once back in service. Until then it counts as out of
// service, and its gate's condition is set True (undrains) when it is not.
func readyOnImage(s *podStep, pod *Pod, changedHere bool) {
	s.State, s.Since = StateDone, pod.ReadySince
	if changedHere && pod.ReadySince.After(pod.ChangedAt) {
		s.Took = pod.ReadySince.Sub(pod.ChangedAt)
	}
	if pod.Gated && (pod.Gate == nil || !*pod.Gate || !pod.InService) {
		s.State, s.out, s.next = StateChanging, true, Poll
		s.moving = pod.Gate != nil && *pod.Gate // set True already: the kubelet has yet to see it
		return
	}
	s.Upgraded = true
}

// changing: changed (by rollgate, or created on the image), not yet ready. Only a change of this
// step that never came through can fail: a pod through the upgrade that is not ready again
// later, or one on the image from before, is out of service, not a failed change. Only
// rollgate's own change keeps its gate False until it is ready; any other pod on the image gets
// it True (undrains), to be Ready as soon as its containers are.
func changing(s *podStep, in Input, pod *Pod, changedTo, changedHere bool) {
	s.moving, s.out = changedHere && !s.Upgraded, true
	s.State, s.Since = StateChanging, pod.ChangedAt
	// Evidence against the version past the health timeout: a pod through this step, or changed
	// longer ago than its own timeout, that is not ready; not the pod on its way now.
	s.unready = changedTo && (s.Upgraded || !in.Now.Before(pod.ChangedAt.Add(in.Timeout)))
	if !changedHere || s.Upgraded {
		return
	}
	if pod.ChangedAt.Add(in.Timeout).After(in.Now) {
		s.next = Poll
		return
	}
	s.State = StateFailed
	s.failed = fmt.Sprintf("%s is not ready %s after its image changed in place to %s", pod.Name, in.Timeout, in.Image)
}

// draining: out of its Service through the gate, on its way to the change once its grace ends.
func draining(s *podStep, in Input, pod *Pod, changedTo bool) {
	s.moving, s.out = true, true
	s.State, s.Since = StateDraining, pod.GateSince
	switch left := pod.GateSince.Add(in.Grace).Sub(in.Now); {
	case changedTo && !pod.ChangedAt.Before(pod.GateSince):
		// Changed in this drain, yet not on the image (a webhook rewrites it): never changed
		// twice; it fails when its timeout passes.
		s.State, s.Since = StateChanging, pod.ChangedAt
		if pod.ChangedAt.Add(in.Timeout).After(in.Now) {
			s.next = Poll
		} else {
			s.State = StateFailed
			s.failed = fmt.Sprintf("%s does not run %s %s after its image was changed to it in place (does a webhook rewrite it?)", pod.Name, in.Image, in.Timeout)
		}
	case !in.Move && pod.Ready:
		// No move to finish while the template has another image: back in service.
		s.moving = false
	case !in.Move:
		// Nor for a pod that could not serve: it stays out rather than go back only to be drained
		// again once the template has the image (a rollback's renderer has yet to write it). Its
		// containers' readiness shows in no watched object: look again, soon while the template
		// may yet come, then at a slower pace.
		s.next = HeldPoll
		if in.Now.Sub(pod.GateSince) < in.Timeout {
			s.next = Poll
		}
	case left > 0:
		s.next = left
	default:
		s.change = true
		s.State, s.Since, s.Changed = StateChanging, in.Now, true
	}
}
