package controllers

// waitSlots bound the reconciles that wait on a service outside the cluster at once: Prometheus
// (spec.analysis) or a registry look-up (spec.checkImage). One that does not answer holds each
// for its timeout; the other workers go on with the other configs.
type waitSlots chan struct{}

// allWaiting says why a reconcile found no slot.
const allWaiting = "as many configs as the manager lets wait for Prometheus or a registry at once (half its --concurrency) are waiting"

// newWaitSlots lets half of workers (at least one) wait at once.
func newWaitSlots(workers int) waitSlots { return make(waitSlots, max(1, workers/2)) }

// take takes a slot if one is free; nil slots have no bound.
func (w waitSlots) take() bool {
	if w == nil {
		return true
	}
	select {
	case w <- struct{}{}:
		return true
	default:
		return false
	}
}

// give returns a slot taken.
func (w waitSlots) give() {
	if w != nil {
		<-w
	}
}
