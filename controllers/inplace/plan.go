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
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/image"
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

// Budget is what the plan needs of a PodDisruptionBudget: its status, and which of the pods it
// selects.
type Budget struct {
	Name string
	// DisruptionsAllowed, CurrentHealthy and ExpectedPods are the budget's status.
	DisruptionsAllowed, CurrentHealthy, ExpectedPods int32
	// Selects names the pods of the StatefulSet it selects.
	Selects map[string]bool
}

// allows is how many more of the pods in service the budget lets leave now. Its status lags the
// pods: a pod it counted healthy that is out of service now (drained a moment ago) is taken off
// what it allows. Pods it selects outside the StatefulSet, unseen here, are taken as healthy.
func (b Budget) allows(pods []Pod) int32 {
	var selected, healthy int32
	for i := range pods {
		if b.Selects[pods[i].Name] {
			selected++
			if pods[i].InService && !pods[i].Deleting { // as the disruption controller counts them
				healthy++
			}
		}
	}
	stale := b.CurrentHealthy - healthy - max(b.ExpectedPods-selected, 0)
	return b.DisruptionsAllowed - max(stale, 0)
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
	byOrdinal := map[int32]*Pod{}
	for i := range in.Pods {
		if o := in.Pods[i].Ordinal; o >= in.First && o < in.End {
			byOrdinal[o] = &in.Pods[i]
		}
	}
	from := in.First + max(in.Partition, 0)
	switch {
	case in.End <= in.First && in.AllowZeroReplicas:
		p.Verdict = health.Verdict{State: health.Healthy, Reason: ReasonInPlaceComplete, Message: "0 replicas (spec.allowZeroReplicas)"}
		return p
	case in.End <= in.First:
		p.Verdict = health.Verdict{State: health.Blocked, Reason: health.ReasonScaledToZero,
			Message: "StatefulSet has 0 replicas: no pod would run the version; scale it up, or set spec.allowZeroReplicas"}
		return p
	case from >= in.End:
		p.Verdict = health.Verdict{State: health.Blocked, Reason: health.ReasonPartitionCoversAll, Message: fmt.Sprintf(
			"spec.strategy.inPlace.partition %d covers all %d pods: no pod would run the version; lower it", in.Partition, in.End-in.First)}
		return p
	}
	order := make([]int32, 0, in.End-from)
	for o := in.End - 1; o >= from; o-- {
		order = append(order, o)
	}
	if in.Backward {
		slices.Reverse(order)
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
	for _, o := range order {
		pod := byOrdinal[o]
		if pod == nil {
			// Being recreated, maybe after the upgrade took it out: it counts as out of service.
			unavailable++
			missing = append(missing, fmt.Sprintf("ordinal %d", o))
			p.Pods = append(p.Pods, Progress{Name: fmt.Sprintf("ordinal %d", o), State: StateWaiting})
			continue
		}
		onImage := image.Renders(pod.Image, in.Image)
		// Changed here: rollgate wrote the image into it in this step (not in an earlier
		// rollout): its readiness timeout runs, and its readiness is its change's.
		changedTo := pod.ChangedTo != "" && image.Renders(pod.ChangedTo, in.Image) && !pod.ChangedAt.IsZero()
		changedHere := changedTo && onImage && !pod.ChangedAt.Before(in.Since)
		pr := Progress{Name: pod.Name, Changed: changedHere, Upgraded: in.Done[pod.Name]}
		switch {
		case pod.Deleting:
			unavailable++
			missing = append(missing, pod.Name+" (terminating)")
			pr.State = StateWaiting
		case onImage && runs(pod, in.Image) && pod.Ready:
			// Ready on the image: done once back in service. Until then it counts as out of
			// service, and its gate's condition is set True (below) when it is not.
			pr.State, pr.Since = StateDone, pod.ReadySince
			if changedHere && pod.ReadySince.After(pod.ChangedAt) {
				pr.Took = pod.ReadySince.Sub(pod.ChangedAt)
			}
			if pod.Gated && (pod.Gate == nil || !*pod.Gate || !pod.InService) {
				pr.State = StateChanging
				moving[pod.Name] = pod.Gate != nil && *pod.Gate // set True already: the kubelet has yet to see it
				unavailable++
				p.Next = sooner(p.Next, Poll)
			} else {
				pr.Upgraded = true
			}
		case onImage:
			// Changed (by rollgate, or created on the image), not yet ready. Only a change of this
			// step that never came through can fail: a pod through the upgrade that is not ready
			// again later, or one on the image from before, is out of service, not a failed change.
			// Only rollgate's own change keeps its gate False until it is ready; any other pod on
			// the image gets it True (below), to be Ready as soon as its containers are.
			moving[pod.Name] = changedHere && !pr.Upgraded
			unavailable++
			pr.State, pr.Since = StateChanging, pod.ChangedAt
			// Evidence against the version past the health timeout: a pod through this step, or
			// changed longer ago than its own timeout, that is not ready; not the pod on its way now.
			p.Unready = p.Unready || (changedTo && (pr.Upgraded || !in.Now.Before(pod.ChangedAt.Add(in.Timeout))))
			if changedHere && !pr.Upgraded {
				if left := pod.ChangedAt.Add(in.Timeout).Sub(in.Now); left > 0 {
					p.Next = sooner(p.Next, Poll)
				} else {
					pr.State = StateFailed
					failed = append(failed, fmt.Sprintf("%s is not ready %s after its image changed in place to %s", pod.Name, in.Timeout, in.Image))
				}
			}
		case !pod.Gated:
			ungated = append(ungated, pod.Name)
			pr.State = StateWaiting
		case pod.Gate != nil && !*pod.Gate:
			moving[pod.Name] = true
			unavailable++
			pr.State, pr.Since = StateDraining, pod.GateSince
			switch left := pod.GateSince.Add(in.Grace).Sub(in.Now); {
			case changedTo && !pod.ChangedAt.Before(pod.GateSince):
				// Changed in this drain, yet not on the image (a webhook rewrites it): never changed
				// twice; it fails when its timeout passes.
				pr.State, pr.Since = StateChanging, pod.ChangedAt
				if pod.ChangedAt.Add(in.Timeout).After(in.Now) {
					p.Next = sooner(p.Next, Poll)
				} else {
					pr.State = StateFailed
					failed = append(failed, fmt.Sprintf("%s does not run %s %s after its image was changed to it in place (does a webhook rewrite it?)", pod.Name, in.Image, in.Timeout))
				}
			case !in.Move && pod.Ready:
				// No move to finish while the template has another image: back in service.
				moving[pod.Name] = false
			case !in.Move:
				// Nor for a pod that could not serve: it stays out rather than go back only to be
				// drained again once the template has the image (a rollback's renderer has yet to
				// write it). Its containers' readiness shows in no watched object: look again, soon
				// while the template may yet come, then at a slower pace.
				if in.Now.Sub(pod.GateSince) < in.Timeout {
					p.Next = sooner(p.Next, Poll)
				} else {
					p.Next = sooner(p.Next, HeldPoll)
				}
			case left > 0:
				p.Next = sooner(p.Next, left)
			default:
				p.Actions = append(p.Actions, Action{Change, pod.Name})
				pr.State, pr.Since, pr.Changed = StateChanging, in.Now, true
			}
		default:
			waiting = append(waiting, len(p.Pods))
			pr.State = StateWaiting
			if !pod.InService { // down already (a crash loop, say): it counts, and leaves at no cost
				unavailable++
			}
		}
		p.Pods = append(p.Pods, pr)
	}
	// Pods put back first: each ready pod on the image (at any ordinal: one the StatefulSet
	// created has no condition yet) whose gate is not True and that is not mid-move, and each pod
	// below the partition that lacks it.
	var undrain []Action
	for i := range in.Pods {
		pod := &in.Pods[i]
		if pod.Gated && !moving[pod.Name] && !pod.Deleting && (pod.Gate == nil || !*pod.Gate) &&
			(image.Renders(pod.Image, in.Image) || pod.Ordinal < from || !in.Move) {
			undrain = append(undrain, Action{Undrain, pod.Name})
		}
	}
	slices.SortFunc(undrain, func(a, b Action) int { return strings.Compare(a.Pod, b.Pod) })
	if len(undrain) > 0 {
		p.Next = sooner(p.Next, Poll)
	}

	switch {
	case len(ungated) > 0:
		p.Verdict = health.Verdict{State: health.Blocked, Reason: ReasonNoReadinessGate, Message: fmt.Sprintf(
			"pods %s have no readiness gate %s (they were created before the template had it): delete them one at a time so that the StatefulSet recreates them with it",
			strings.Join(ungated, ", "), v1alpha1.InPlaceReadinessGate)}
	case len(failed) > 0:
		p.Verdict = health.Verdict{State: health.Failed, Reason: ReasonPodNotReady, Message: strings.Join(failed, "; ")}
	}
	if p.Verdict.State != "" {
		p.Actions = undrain // a blocked or failed upgrade moves no pod on
		return p
	}
	p.Actions = append(undrain, p.Actions...)
	held := p.drain(in, waiting, unavailable, down)
	p.Held = held
	if len(p.Actions) > 0 {
		p.Next = sooner(p.Next, time.Second) // what the writes start, no watched object may tell
	}
	p.Verdict = verdict(in, p.Pods, missing, from, held)
	return p
}

// drain takes pods still to move out of their Service (waiting indexes p.Pods, in order): first
// every one out of service already, at no cost (a pod crash-looping on the old image gets the new
// one first, rather than hold the others for ever); then the next ones in service, in order, while
// fewer than maxUnavailable pods are out of service and every budget that selects the pod allows
// it. It says what holds the next pod in service: a budget, or pods down that the upgrade did not
// take out and cannot move (down).
func (p *Plan) drain(in Input, waiting []int, unavailable int32, down []string) string {
	if !in.Move {
		return ""
	}
	byName := map[string]*Pod{}
	for i := range in.Pods {
		byName[in.Pods[i].Name] = &in.Pods[i]
	}
	take := func(i int) {
		p.Actions = append(p.Actions, Action{Drain, p.Pods[i].Name})
		p.Pods[i].State, p.Pods[i].Since = StateDraining, in.Now
		p.Next = sooner(p.Next, in.Grace)
	}
	var inService []int
	for _, i := range waiting {
		if byName[p.Pods[i].Name].InService {
			inService = append(inService, i)
		} else {
			take(i)
		}
	}
	allowed := make([]int32, len(in.Budgets))
	for b := range in.Budgets {
		allowed[b] = in.Budgets[b].allows(in.Pods)
	}
	for _, i := range inService {
		name := p.Pods[i].Name
		if limit := max(in.MaxUnavailable, 1); unavailable >= limit {
			if len(down) == 0 {
				return "" // the upgrade's own pods: the next goes when one is back
			}
			p.Next = sooner(p.Next, BudgetPoll) // a pod down comes back with no event here
			return fmt.Sprintf("%s out of service, which the upgrade did not take out, and maxUnavailable is %d: %s waits", strings.Join(down, ", "), limit, name)
		}
		for b, budget := range in.Budgets {
			if budget.Selects[name] && allowed[b] <= 0 {
				p.Next = sooner(p.Next, BudgetPoll) // its status changes with pods no watch here sees
				return fmt.Sprintf("PodDisruptionBudget %s allows no disruption: %s waits", budget.Name, name)
			}
		}
		for b, budget := range in.Budgets {
			if budget.Selects[name] {
				allowed[b]--
			}
		}
		unavailable++
		take(i)
	}
	return ""
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
