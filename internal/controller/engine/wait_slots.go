package engine

// WaitSlots bound the reconciles that wait on a service outside the cluster at once: Prometheus
// (spec.analysis) or a registry look-up (spec.checkImage). One that does not answer holds each
// for its timeout; the other workers go on with the other configs.
type WaitSlots chan struct{}

// allWaiting says why a reconcile found no slot.
const allWaiting = "as many configs as the manager lets wait for Prometheus or a registry at once (half its --concurrency) are waiting"

// NewWaitSlots lets half of workers (at least one) wait at once.
func NewWaitSlots(workers int) WaitSlots { return make(WaitSlots, max(1, workers/2)) }

// take takes a slot if one is free; nil slots have no bound.
func (w WaitSlots) take() bool {
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
func (w WaitSlots) give() {
	if w != nil {
		<-w
	}
}
