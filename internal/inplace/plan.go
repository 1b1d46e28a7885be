// Package inplace plans the in-place upgrade of a StatefulSet's pods as a pure function: given
// the pods as read, the image they must run (their template's) and the strategy, Make says which
// pods to take out of their Service, change or put back now, how far the upgrade got, and whether
// it failed. A pod leaves its Service through its readiness gate: its condition False drops it
// from the endpoints, and after the drain grace its container's image is changed, which the
// kubelet carries out by restarting that container in the same pod. The plan keeps no state of
// its own: what it needs is on the pods (the gate's condition and when it changed, the image and
// when rollgate changed it), so a manager that restarts goes on where the pods are.
package inplace

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
)

// Pod is what the plan needs of one pod of the StatefulSet.
type Pod struct {
	Name    string
	Ordinal int32
	// Gated: the pod's spec has the readiness gate (a pod takes the gates of the template it was
	// created from, never later ones).
	Gated bool
	// Image is the managed container's image in the pod's spec; Running the image its status
	// reports, and Ready whether it is ready (the ContainersReady condition), since ReadySince.
	Image, Running string
	Ready          bool
	ReadySince     time.Time
	// InService: the pod is Ready (its containers, and every readiness gate): in its Service's
	// endpoints.
	InService bool
	// StartedAt is when its container last started (state.running.startedAt).
	StartedAt time.Time
	// Gate is the readiness gate's condition: nil when absent; GateSince its last transition.
	Gate      *bool
	GateSince time.Time
	// ChangedAt is when rollgate last changed the pod's image in place, and ChangedTo to which
	// image; zero and "" when it never did.
	ChangedAt time.Time
	ChangedTo string
	Deleting  bool
}

// Input is what Make looks at.
type Input struct {
	// Image is the image the pods must run: the target of a health check, the recorded image in
	// a rollback or at rest.
	Image string
	// Move: the template renders Image, so pods may be taken out and changed to it; else a plan
	// only puts back pods that are ready (the renderer has yet to write the template, or cannot).
	Move bool
	// Since is when the step began: a change before it belongs to an earlier rollout.
	Since time.Time
	// AllowZeroReplicas: 0 replicas is healthy (spec.allowZeroReplicas).
	AllowZeroReplicas bool
	Pods              []Pod
	// First and End bound the StatefulSet's ordinals: [First, End) (spec.ordinals.start and
	// replicas). Pods below First+Partition are never moved.
	First, End, Partition int32
	// MaxUnavailable is how many of the StatefulSet's pods may be out of service at once, whoever
	// took them out: the upgrade drains no pod in service while as many are.
	MaxUnavailable int32
	// Budgets are the PodDisruptionBudgets that select some of the pods.
	Budgets []Budget
	// Grace is how long a pod drains before its image changes; Timeout how long it then has to
	// be ready.
	Grace, Timeout time.Duration
	// Backward moves the lowest ordinal first (a rollback undoes the moves in reverse); else the
	// highest goes first.
	Backward bool
	// Done names the pods already through this step's upgrade to Image (the config's status says
	// so): one that is not ready again is out of service, but did not fail its change.
	Done map[string]bool
	Now  time.Time
}

// Poll is how often the pods are looked at while one is on its way: nothing the manager watches
// tells when a pod's container becomes ready behind a readiness gate that is False.
const Poll = 2 * time.Second

// BudgetPoll is how often the pods are looked at while a PodDisruptionBudget holds the next drain.
const BudgetPoll = 10 * time.Second

// HeldPoll is how often a pod held out of service, not ready, is looked at once the template
// could have had the image for longer than a pod's readiness timeout.
const HeldPoll = time.Minute

// ActionKind is what is done to a pod.
type ActionKind string

const (
	// Drain sets the readiness gate's condition False: the pod leaves its Service's endpoints.
	Drain ActionKind = "Drain"
	// Change writes the image into the pod's container, with the time (ChangedAt).
	Change ActionKind = "Change"
	// Undrain sets the readiness gate's condition True: the pod, ready, serves again.
	Undrain ActionKind = "Undrain"
)

// Action is one write to one pod.
type Action struct {
	Kind ActionKind
	Pod  string
}

// State is where a pod the upgrade moves stands.
type State string

const (
	StateWaiting  State = "Waiting"  // still on another image, in service
	StateDraining State = "Draining" // out of its Service, for the drain grace
	StateChanging State = "Changing" // its image changed; waiting for its container to be ready
	StateDone     State = "Done"     // runs the image, ready, in service
	StateFailed   State = "Failed"   // not ready within the timeout after its image changed
)

// Progress is one pod's place in the upgrade.
type Progress struct {
	Name  string
	State State
	// Since is when it entered the state: the drain, the change, the readiness; zero when
	// waiting, or not known (a pod the StatefulSet created on the image).
	Since time.Time
	// Changed: rollgate changed its image to the plan's in this step; Took is then, done, how
	// long it took from the change to ready.
	Changed bool
	Took    time.Duration
	// Upgraded: the pod came through this step (ready on the image, in service), now or before.
	Upgraded bool
}

// Plan is what Make decides.
type Plan struct {
	// Image is the image the pods move to (Input.Image).
	Image   string
	Verdict health.Verdict
	// Actions to carry out now, in order: the pods put back into service first.
	Actions []Action
	// Pods are the pods the upgrade moves (ordinal First+Partition and above), in the order they
	// move.
	Pods []Progress
	// Next > 0: look again after this long, when a drain grace or a timeout ends.
	Next time.Duration
	// Unready: a pod rollgate changed to Image is not ready, though it came through this step (its
	// container crashed later, say) or its change is older than its timeout: past the health
	// timeout, the version's own evidence against it. A pod being changed now is not.
	Unready bool
	// Held says what holds the next pod in service (pods down the upgrade did not take out, a
	// PodDisruptionBudget), or "".
	Held string
}

// Reasons of the plan's verdicts.
const (
	ReasonInPlaceProgressing = "InPlaceProgressing"
	ReasonInPlaceComplete    = "InPlaceComplete"
	ReasonPodNotReady        = "PodNotReadyAfterChange"
	ReasonNoReadinessGate    = "NoReadinessGate"
)

// Make plans the upgrade.
func Make(in Input) Plan {
	p := Plan{Image: in.Image}
	from := in.First + max(in.Partition, 0)
	if v, ok := unplannable(in, from); ok {
		p.Verdict = v
		return p
	}
	byOrdinal := map[int32]*Pod{}
	for i := range in.Pods {
		if o := in.Pods[i].Ordinal; o >= in.First && o < in.End {
			byOrdinal[o] = &in.Pods[i]
		}
	}
	var unavailable int32 // out of service, whoever took them out, or on their way back
	var down []string     // of those, the ones the upgrade did not take out and cannot move now
	var waiting []int     // indexes into p.Pods of the pods still to move, in order
	// The pods the upgrade never moves count too.
	for o := in.First; o < from; o++ {
		if pod := byOrdinal[o]; pod == nil || pod.Deleting || !pod.InService {
			unavailable++
			down = append(down, fmt.Sprintf("ordinal %d", o))
		}
	}
	var missing, ungated, failed []string
	moving := map[string]bool{} // draining or changing: their gate stays as it is
	for _, o := range moveOrder(in, from) {
		s := stepOf(in, o, byOrdinal[o])
		if s.waiting {
			waiting = append(waiting, len(p.Pods))
		}
		p.Pods = append(p.Pods, s.Progress)
		if s.change {
			p.Actions = append(p.Actions, Action{Change, s.Name})
		}
		if s.out {
			unavailable++
		}
		if s.next > 0 {
			p.Next = sooner(p.Next, s.next)
		}
		moving[s.Name], p.Unready = s.moving, p.Unready || s.unready
		missing, ungated, failed = appendSome(missing, s.missing), appendSome(ungated, s.ungated), appendSome(failed, s.failed)
	}
	undrain := undrains(in, moving, from)
	if len(undrain) > 0 {
		p.Next = sooner(p.Next, Poll)
	}
	if v, ok := stopped(ungated, failed); ok {
		p.Verdict, p.Actions = v, undrain // a blocked or failed upgrade moves no pod on
		return p
	}
	p.Actions = append(undrain, p.Actions...)
	p.Held = p.drain(in, waiting, unavailable, down)
	if len(p.Actions) > 0 {
		p.Next = sooner(p.Next, time.Second) // what the writes start, no watched object may tell
	}
	p.Verdict = verdict(in, p.Pods, missing, from, p.Held)
	return p
}

// unplannable is the verdict on a StatefulSet whose upgrade has no pod to move: none at all, or
// all of them below the partition.
func unplannable(in Input, from int32) (health.Verdict, bool) {
	switch {
	case in.End <= in.First && in.AllowZeroReplicas:
		return health.Verdict{State: health.Healthy, Reason: ReasonInPlaceComplete, Message: "0 replicas (spec.allowZeroReplicas)"}, true
	case in.End <= in.First:
		return health.Verdict{State: health.Blocked, Reason: health.ReasonScaledToZero,
			Message: "StatefulSet has 0 replicas: no pod would run the version; scale it up, or set spec.allowZeroReplicas"}, true
	case from >= in.End:
		return health.Verdict{State: health.Blocked, Reason: health.ReasonPartitionCoversAll, Message: fmt.Sprintf(
			"spec.strategy.inPlace.partition %d covers all %d pods: no pod would run the version; lower it", in.Partition, in.End-in.First)}, true
	}
	return health.Verdict{}, false
}

// stopped is the verdict on an upgrade that cannot go on: pods without the readiness gate block
// it, and a pod whose change did not come through fails it.
func stopped(ungated, failed []string) (health.Verdict, bool) {
	switch {
	case len(ungated) > 0:
		return health.Verdict{State: health.Blocked, Reason: ReasonNoReadinessGate, Message: fmt.Sprintf(
			"pods %s have no readiness gate %s (they were created before the template had it): delete them one at a time so that the StatefulSet recreates them with it",
			strings.Join(ungated, ", "), v1alpha1.InPlaceReadinessGate)}, true
	case len(failed) > 0:
		return health.Verdict{State: health.Failed, Reason: ReasonPodNotReady, Message: strings.Join(failed, "; ")}, true
	}
	return health.Verdict{}, false
}

// moveOrder is the ordinals the upgrade moves, highest first (a rollback: lowest first).
func moveOrder(in Input, from int32) []int32 {
	order := make([]int32, 0, in.End-from)
	for o := in.End - 1; o >= from; o-- {
		order = append(order, o)
	}
	if in.Backward {
		slices.Reverse(order)
	}
	return order
}

// undrains are the pods put back in service first: each ready pod on the image (at any ordinal:
// one the StatefulSet created has no condition yet) whose gate is not True and that is not
// mid-move, and each pod below the partition that lacks it.
func undrains(in Input, moving map[string]bool, from int32) []Action {
	var undrain []Action
	for i := range in.Pods {
		pod := &in.Pods[i]
		if pod.Gated && !moving[pod.Name] && !pod.Deleting && (pod.Gate == nil || !*pod.Gate) &&
			(image.Renders(pod.Image, in.Image) || pod.Ordinal < from || !in.Move) {
			undrain = append(undrain, Action{Undrain, pod.Name})
		}
	}
	slices.SortFunc(undrain, func(a, b Action) int { return strings.Compare(a.Pod, b.Pod) })
	return undrain
}

func appendSome(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}

// runs: the pod's container runs image (its spec's): its status says so, or, since a runtime may
// report the image by tag alone or by its ID, the pod was never changed in place (it runs what it
// was created with), or its container started after rollgate changed it.
func runs(pod *Pod, img string) bool {
	return image.Renders(pod.Running, img) || pod.ChangedAt.IsZero() || !pod.StartedAt.Before(pod.ChangedAt)
}

// verdict sums the upgrade up: healthy once every pod it moves runs the image, ready and in
// service.
func verdict(in Input, pods []Progress, missing []string, from int32, held string) health.Verdict {
	var done int
	var notes []string
	for _, pr := range pods {
		switch pr.State {
		case StateDone:
			done++
		case StateDraining, StateChanging:
			notes = append(notes, pr.Name+" "+strings.ToLower(string(pr.State)))
		}
	}
	counts := fmt.Sprintf("%d/%d pods from ordinal %d run %s in place", done, len(pods), from, in.Image)
	if done == len(pods) && len(missing) == 0 {
		return health.Verdict{State: health.Healthy, Reason: ReasonInPlaceComplete, Message: counts}
	}
	if len(missing) > 0 {
		notes = append(notes, "waiting for "+strings.Join(missing, ", "))
	}
	if !in.Move {
		notes = append(notes, "no pod moves until the StatefulSet's template has the image")
	}
	if held != "" {
		notes = append(notes, held)
	}
	if len(notes) > 0 {
		counts += ": " + strings.Join(notes, ", ")
	}
	return health.Verdict{State: health.Progressing, Reason: ReasonInPlaceProgressing, Message: counts}
}

func sooner(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}
