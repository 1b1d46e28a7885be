package inplace

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rollgate/rollgate/internal/health"
)

var now = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

const (
	oldImage = "registry.example/db:1.0.0"
	newImage = "registry.example/db:1.1.0"
)

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

// pod is pod db-<ordinal> on img, ready and in service.
func pod(ordinal int32, img string, mods ...func(*Pod)) Pod {
	p := Pod{Name: fmt.Sprintf("db-%d", ordinal), Ordinal: ordinal, Gated: true, Image: img, Running: img, Ready: true, InService: true,
		ReadySince: now.Add(-time.Hour), Gate: yes(), GateSince: now.Add(-time.Hour)}
	for _, m := range mods {
		m(&p)
	}
	return p
}

// drained: its gate went False at since.
func drained(since time.Time) func(*Pod) {
	return func(p *Pod) { p.Gate, p.GateSince, p.InService = no(), since, false }
}

// changed: rollgate wrote img into it at at; its container runs it, not yet ready.
func changed(img string, at time.Time) func(*Pod) {
	return func(p *Pod) {
		p.Image, p.ChangedAt, p.ChangedTo, p.Running, p.Ready, p.InService = img, at, img, img, false, false
	}
}

// readyAt: its container became ready at at; it is in service if its gate's condition is True.
func readyAt(at time.Time) func(*Pod) {
	return func(p *Pod) { p.Ready, p.ReadySince, p.InService = true, at, p.Gate != nil && *p.Gate }
}

// gateSet: its gate's condition was set True, which the kubelet has yet to see.
func gateSet(p *Pod) { p.Gate = yes() }

func input(pods ...Pod) Input {
	return Input{Image: newImage, Move: true, Since: now.Add(-time.Hour), Pods: pods, First: 0, End: 5, Partition: 2, MaxUnavailable: 1,
		Grace: 10 * time.Second, Timeout: 2 * time.Minute, Now: now}
}

func five(img string) []Pod {
	return []Pod{pod(0, img), pod(1, img), pod(2, img), pod(3, img), pod(4, img)}
}

func actions(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, string(a.Kind)+" "+a.Pod)
	}
	return strings.Join(out, ", ")
}

func states(p Plan) string {
	var out []string
	for _, pr := range p.Pods {
		out = append(out, pr.Name+"="+string(pr.State))
	}
	return strings.Join(out, " ")
}

// The pods move highest ordinal first, one at a time with maxUnavailable 1, each drained for the
// grace before its image changes and put back once ready; the pods below the partition are never
// moved. Each step is what the pods show, so a plan made again after a restart goes on.
func TestPodsMoveOneAtATimeHighestFirst(t *testing.T) {
	pods := func(mods map[int32][]func(*Pod)) []Pod {
		out := five(oldImage)
		for o, ms := range mods {
			for _, m := range ms {
				m(&out[o])
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		pods    []Pod
		actions string
		states  string
		next    time.Duration
		state   health.State
	}{
		{name: "nothing moved yet: db-4 leaves its Service", pods: pods(nil), actions: "Drain db-4",
			states: "db-4=Draining db-3=Waiting db-2=Waiting", next: time.Second, state: health.Progressing},
		{name: "db-4 draining, within the grace: wait", pods: pods(map[int32][]func(*Pod){4: {drained(now.Add(-4 * time.Second))}}),
			states: "db-4=Draining db-3=Waiting db-2=Waiting", next: 6 * time.Second, state: health.Progressing},
		{name: "db-4 drained for the grace: its image changes", pods: pods(map[int32][]func(*Pod){4: {drained(now.Add(-10 * time.Second))}}),
			actions: "Change db-4", states: "db-4=Changing db-3=Waiting db-2=Waiting", next: time.Second, state: health.Progressing},
		{name: "db-4 changed, not yet ready: nothing else moves", pods: pods(map[int32][]func(*Pod){4: {drained(now.Add(-20 * time.Second)), changed(newImage, now.Add(-10*time.Second))}}),
			states: "db-4=Changing db-3=Waiting db-2=Waiting", next: Poll, state: health.Progressing},
		{name: "db-4 ready: put back; nothing else moves until it is in service", pods: pods(map[int32][]func(*Pod){4: {drained(now.Add(-20 * time.Second)), changed(newImage, now.Add(-10*time.Second)), readyAt(now.Add(-time.Second))}}),
			actions: "Undrain db-4", states: "db-4=Changing db-3=Waiting db-2=Waiting", next: time.Second, state: health.Progressing},
		{name: "db-4 put back, not yet in service: wait", pods: pods(map[int32][]func(*Pod){4: {drained(now.Add(-20 * time.Second)), changed(newImage, now.Add(-10*time.Second)), readyAt(now.Add(-time.Second)), gateSet}}),
			states: "db-4=Changing db-3=Waiting db-2=Waiting", next: Poll, state: health.Progressing},
		{name: "db-4 back in service, db-3 draining", pods: pods(map[int32][]func(*Pod){4: {changed(newImage, now.Add(-10*time.Second)), readyAt(now.Add(-time.Second))},
			3: {drained(now.Add(-time.Second))}}),
			states: "db-4=Done db-3=Draining db-2=Waiting", next: 9 * time.Second, state: health.Progressing},
		{name: "all three moved: healthy, db-0 and db-1 untouched", pods: pods(map[int32][]func(*Pod){
			4: {changed(newImage, now.Add(-time.Minute)), readyAt(now.Add(-50 * time.Second))},
			3: {changed(newImage, now.Add(-time.Minute)), readyAt(now.Add(-50 * time.Second))},
			2: {changed(newImage, now.Add(-time.Minute)), readyAt(now.Add(-50 * time.Second))}}),
			states: "db-4=Done db-3=Done db-2=Done", state: health.Healthy},
		{name: "db-3 not ready two minutes after its change: failed, nothing else moves", pods: pods(map[int32][]func(*Pod){
			4: {changed(newImage, now.Add(-5*time.Minute)), readyAt(now.Add(-4 * time.Minute))},
			3: {drained(now.Add(-3 * time.Minute)), changed(newImage, now.Add(-2*time.Minute))}}),
			states: "db-4=Done db-3=Failed db-2=Waiting", state: health.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Make(input(tc.pods...))
			if actions(p) != tc.actions || states(p) != tc.states || p.Next != tc.next || p.Verdict.State != tc.state {
				t.Errorf("actions %q, states %q, next %s, verdict %+v; want %q, %q, %s, %s", actions(p), states(p), p.Next, p.Verdict, tc.actions, tc.states, tc.next, tc.state)
			}
			for _, a := range p.Actions {
				if a.Pod == "db-0" || a.Pod == "db-1" {
					t.Errorf("%s below the partition", a.Kind+" "+ActionKind(a.Pod))
				}
			}
		})
	}
}

// With maxUnavailable 2 two pods drain at once; a pod that was not ready before the upgrade
// (nothing the upgrade did) takes no place of the budget until it is drained in its turn.
func TestMaxUnavailableCountsWhatTheUpgradeDid(t *testing.T) {
	in := input(five(oldImage)...)
	in.MaxUnavailable = 2
	if p := Make(in); actions(p) != "Drain db-4, Drain db-3" {
		t.Errorf("maxUnavailable 2: %q, want db-4 and db-3 drained", actions(p))
	}
	broken := five(oldImage)
	broken[4].Ready, broken[4].InService, broken[2].Ready, broken[2].InService = false, false, false, false
	if p := Make(input(broken...)); actions(p) != "Drain db-4, Drain db-2" {
		t.Errorf("db-4 and db-2 not ready before the upgrade: %q, want both (out of service already) drained, and db-3 kept in service", actions(p))
	}
	// A pod the StatefulSet recreated on the image, not yet ready, counts: nothing more leaves.
	recreated := five(oldImage)
	recreated[4] = pod(4, newImage, func(p *Pod) { p.Ready, p.Running, p.Gate = false, "", nil })
	if p := Make(input(recreated...)); actions(p) != "Undrain db-4" || states(p) != "db-4=Changing db-3=Waiting db-2=Waiting" {
		t.Errorf("db-4 recreated on the image, starting: actions %q, states %q; want it put in service and nothing else moved", actions(p), states(p))
	}
}

// Every pod out of service counts against maxUnavailable, whoever took it down: one below the
// partition, or one crash-looping on the old image. With three pods and one down, none more leaves.
// A pod that is out of service already leaves its Service at no cost.
func TestMaxUnavailableCountsEveryPodOutOfService(t *testing.T) {
	three := func(mods ...func([]Pod)) Input {
		pods := []Pod{pod(0, oldImage), pod(1, oldImage), pod(2, oldImage)}
		for _, m := range mods {
			m(pods)
		}
		in := input(pods...)
		in.End, in.Partition = 3, 0
		return in
	}
	down := func(o int) func([]Pod) { return func(p []Pod) { p[o].Ready, p[o].InService = false, false } }
	for _, tc := range []struct {
		name, actions, message string
		in                     Input
	}{
		{"all in service: db-2 leaves", "Drain db-2", "", three()},
		{"db-0 down: it is drained first, at no cost, and no pod in service", "Drain db-0", "", three(down(0))},
		{"db-1 down: it is drained first, and no pod in service", "Drain db-1", "", three(down(1))},
		{"db-2, next in turn, down: it is drained, no other", "Drain db-2", "", three(down(2))},
		{"db-0 below the partition down: none leaves, and the message says why", "",
			"ordinal 0 out of service, which the upgrade did not take out, and maxUnavailable is 1: db-2 waits",
			func() Input { in := three(down(0)); in.Partition = 1; return in }()},
		{"db-0 below the partition missing: none leaves", "", "ordinal 0 out of service",
			func() Input { in := three(); in.Pods = in.Pods[1:]; in.Partition = 1; return in }()},
	} {
		if p := Make(tc.in); actions(p) != tc.actions || !strings.Contains(p.Verdict.Message, tc.message) {
			t.Errorf("%s: actions %q, verdict %q; want %q and a message saying %q", tc.name, actions(p), p.Verdict.Message, tc.actions, tc.message)
		}
	}
}

// A PodDisruptionBudget that selects the pods holds every drain of a pod in service while it
// allows no disruption, and allows no more drains at once than it allows disruptions. Its status
// lags the pods: what it counted healthy and is not in service now is taken off what it allows.
func TestADisruptionBudgetHoldsTheDrains(t *testing.T) {
	all := map[string]bool{"db-0": true, "db-1": true, "db-2": true, "db-3": true, "db-4": true}
	budget := func(allowed, healthy, expected int32) Budget {
		return Budget{Name: "db", DisruptionsAllowed: allowed, CurrentHealthy: healthy, ExpectedPods: expected, Selects: all}
	}
	in := input(five(oldImage)...)
	in.MaxUnavailable = 3
	for _, tc := range []struct {
		name    string
		pods    []Pod
		budget  Budget
		actions string
		message string
	}{
		{"none allowed: no drain, and the message says why", five(oldImage), budget(0, 5, 5), "", "PodDisruptionBudget db allows no disruption"},
		{"one allowed: one drain", five(oldImage), budget(1, 5, 5), "Drain db-4", ""},
		{"three allowed: three drains", five(oldImage), budget(3, 5, 5), "Drain db-4, Drain db-3, Drain db-2", ""},
		{"the budget has yet to see db-4 drained: it allows one less", append(five(oldImage)[:4], pod(4, oldImage, drained(now.Add(-time.Second)))), budget(1, 5, 5), "", "allows no disruption"},
		{"a pod the budget selects outside the StatefulSet is not taken for stale", five(oldImage), budget(1, 6, 7), "Drain db-4", ""},
		{"the budget has yet to see db-0 terminating: it allows one less", append([]Pod{pod(0, oldImage, func(p *Pod) { p.Deleting = true })}, five(oldImage)[1:]...),
			budget(1, 5, 5), "", "allows no disruption"},
		{"a pod down already is drained whatever the budget", append(five(oldImage)[:4], pod(4, oldImage, func(p *Pod) { p.Ready, p.InService = false, false })), budget(0, 4, 5), "Drain db-4", ""},
	} {
		in := in
		in.Pods, in.Budgets = tc.pods, []Budget{tc.budget}
		p := Make(in)
		if actions(p) != tc.actions || !strings.Contains(p.Verdict.Message, tc.message) {
			t.Errorf("%s: actions %q, verdict %q; want %q and a message saying %q", tc.name, actions(p), p.Verdict.Message, tc.actions, tc.message)
		}
	}
	// A budget that selects none of the pods holds nothing.
	in.Budgets = []Budget{{Name: "other", Selects: map[string]bool{}}}
	if p := Make(in); actions(p) != "Drain db-4, Drain db-3, Drain db-2" {
		t.Errorf("a budget of other pods: actions %q", actions(p))
	}
}

// A rollback moves the pods back lowest ordinal first (the reverse of the upgrade), starting with
// the one that failed, which is out of service already; pods still on the old image stay.
func TestARollbackMovesThePodsBackInReverse(t *testing.T) {
	pods := five(oldImage)
	pods[4] = pod(4, newImage, func(p *Pod) { p.ChangedAt, p.ChangedTo = now.Add(-10*time.Minute), newImage })
	pods[3] = pod(3, newImage, drained(now.Add(-5*time.Minute)), changed(newImage, now.Add(-4*time.Minute)))
	in := input(pods...)
	in.Image, in.Backward = oldImage, true
	p := Make(in)
	if actions(p) != "Change db-3" || states(p) != "db-2=Done db-3=Changing db-4=Waiting" || p.Verdict.State != health.Progressing {
		t.Errorf("actions %q, states %q, verdict %+v; want db-3 (out of service) changed back first", actions(p), states(p), p.Verdict)
	}
}

// A pod without the readiness gate cannot be taken out of its Service: the upgrade is blocked,
// with the way out, before any pod moves. Ready pods on the image get their gate's condition
// True, at any ordinal: without it they would never be ready.
func TestGates(t *testing.T) {
	pods := five(oldImage)
	pods[3].Gated = false
	if p := Make(input(pods...)); p.Verdict.State != health.Blocked || actions(p) != "" || !strings.Contains(p.Verdict.Message, "pods db-3 have no readiness gate rollgate.dev/in-place-ready") {
		t.Errorf("db-3 without the gate: actions %q, verdict %+v", actions(p), p.Verdict)
	}
	fresh := five(newImage)
	fresh[0].Gate, fresh[4].Gate = nil, no()
	in := input(fresh...)
	if p := Make(in); actions(p) != "Undrain db-0, Undrain db-4" || p.Verdict.State != health.Progressing {
		t.Errorf("pods without their condition: actions %q, verdict %+v; want both put in service", actions(p), p.Verdict)
	}
	// Pods that do not exist (yet) are waited for.
	if p := Make(input(five(newImage)[:4]...)); p.Verdict.State != health.Progressing || !strings.Contains(p.Verdict.Message, "waiting for ordinal 4") {
		t.Errorf("db-4 missing: %+v", p.Verdict)
	}
}

// A pod through the upgrade that is not ready again later is out of service, not a failed change;
// the events' Changed marks only the pods rollgate changed to the image.
func TestAPodDoneThatTurnsUnreadyDidNotFail(t *testing.T) {
	pods := five(oldImage)
	for o := 2; o < 5; o++ {
		pods[o] = pod(int32(o), newImage, func(p *Pod) { p.ChangedAt, p.ChangedTo = now.Add(-3*time.Minute), newImage })
	}
	pods[4].Ready, pods[4].InService = false, false
	in := input(pods...)
	if p := Make(in); p.Verdict.State != health.Failed {
		t.Fatalf("without the status's word: %+v, want db-4 failed", p.Verdict)
	}
	in.Done = map[string]bool{"db-4": true, "db-3": true, "db-2": true}
	p := Make(in)
	if p.Verdict.State != health.Progressing || states(p) != "db-4=Changing db-3=Done db-2=Done" || !p.Pods[1].Changed {
		t.Errorf("db-4 done before, unready now: verdict %+v, states %q, db-3 changed %v", p.Verdict, states(p), p.Pods[1].Changed)
	}
	if p := Make(input(five(newImage)...)); p.Pods[0].Changed {
		t.Error("a pod created on the image counts as changed in place")
	}
}

// What the review of the planner asked for, one case each.
func TestThePlanMovesNothingItShouldNot(t *testing.T) {
	// The template does not run the image yet (the renderer has yet to write it, or cannot): no
	// pod moves; a drained pod on the image that is ready goes back.
	pods := five(oldImage)
	pods[4] = pod(4, newImage, drained(now.Add(-time.Hour)))
	pods[3] = pod(3, oldImage, drained(now.Add(-time.Hour)))
	in := input(pods...)
	in.Move = false
	if p := Make(in); actions(p) != "Undrain db-3, Undrain db-4" || !strings.Contains(p.Verdict.Message, "no pod moves until the StatefulSet's template has the image") {
		t.Errorf("template not on the image: actions %q, verdict %+v; want db-4 and the drained db-3 put back, nothing moved", actions(p), p.Verdict)
	}

	// A pod on the image from an earlier rollout, not ready: out of service, not a failed change.
	old := five(oldImage)
	old[2] = pod(2, oldImage, func(p *Pod) {
		p.ChangedAt, p.ChangedTo, p.Ready, p.InService = now.Add(-2*time.Hour), oldImage, false, false
	})
	in = input(old...)
	in.Image, in.Backward = oldImage, true
	if p := Make(in); p.Verdict.State == health.Failed {
		t.Errorf("a pod changed in an earlier rollout, unready now: %+v", p.Verdict)
	}

	// A webhook rewrites the image: changed once in its drain, never again; it fails in time.
	hooked := five(oldImage)
	hooked[4] = pod(4, "mirror.example/db:1.1.0", drained(now.Add(-time.Minute)), func(p *Pod) { p.ChangedAt, p.ChangedTo = now.Add(-50*time.Second), newImage })
	if p := Make(input(hooked...)); actions(p) != "" || p.Pods[0].State != StateChanging {
		t.Errorf("changed in its drain, not on the image: actions %q, states %q; want no second change", actions(p), states(p))
	}
	hooked[4].GateSince, hooked[4].ChangedAt = now.Add(-5*time.Minute), now.Add(-3*time.Minute)
	if p := Make(input(hooked...)); p.Verdict.State != health.Failed || !strings.Contains(p.Verdict.Message, "does a webhook rewrite it?") {
		t.Errorf("past its timeout: %+v", p.Verdict)
	}

	// A runtime that reports the image by its ID: the container's start after the change tells.
	byID := five(oldImage)
	byID[4] = pod(4, newImage+"@sha256:"+strings.Repeat("a", 64), func(p *Pod) {
		p.Running, p.ChangedAt, p.ChangedTo, p.StartedAt = "sha256:"+strings.Repeat("b", 64), now.Add(-time.Minute), newImage+"@sha256:"+strings.Repeat("a", 64), now.Add(-59*time.Second)
	})
	in = input(byID...)
	in.Image = newImage + "@sha256:" + strings.Repeat("a", 64)
	if p := Make(in); p.Pods[0].State != StateDone {
		t.Errorf("restarted after its change, reported by image ID: %q, want db-4 done", states(p))
	}

	// A pod being recreated counts against maxUnavailable.
	if p := Make(input(five(oldImage)[:4]...)); actions(p) != "" {
		t.Errorf("db-4 missing: actions %q, want none (it is out of service)", actions(p))
	}

	// Nothing to move is no success.
	in = input(five(oldImage)...)
	in.Partition = 5
	if p := Make(in); p.Verdict.State != health.Blocked || p.Verdict.Reason != health.ReasonPartitionCoversAll {
		t.Errorf("partition over all pods: %+v", p.Verdict)
	}
	in = input()
	in.End = 0
	if p := Make(in); p.Verdict.State != health.Blocked {
		t.Errorf("0 replicas: %+v", p.Verdict)
	}
	in.AllowZeroReplicas = true
	if p := Make(in); p.Verdict.State != health.Healthy {
		t.Errorf("0 replicas allowed: %+v", p.Verdict)
	}
}

// A pod the StatefulSet created on the image gets its gate's condition True at once, ready or
// not (nothing else would tell when its containers are ready); one rollgate changed keeps it
// False until it is ready.
func TestNewPodsGoInServiceAsSoonAsReady(t *testing.T) {
	pods := five(newImage)
	for i := range pods {
		pods[i].Gate, pods[i].Ready, pods[i].InService, pods[i].Running = nil, false, false, ""
	}
	in := input(pods...)
	in.Partition = 0
	if p := Make(in); actions(p) != "Undrain db-0, Undrain db-1, Undrain db-2, Undrain db-3, Undrain db-4" {
		t.Errorf("new pods, not yet ready: %q, want all put in service", actions(p))
	}
	changing := five(oldImage)
	changing[4] = pod(4, oldImage, drained(now.Add(-time.Minute)), changed(newImage, now.Add(-30*time.Second)))
	if p := Make(input(changing...)); actions(p) != "" {
		t.Errorf("rollgate's change, not yet ready: %q, want its gate kept False", actions(p))
	}
}

// A pod rollgate changed to the version that is not ready, through or not, is the version's own
// evidence past the health timeout (Plan.Unready); a pod the StatefulSet created is judged by its
// spec when the runtime reports its image by ID.
func TestUnreadyChangedPodsAndImagesByID(t *testing.T) {
	pods := five(oldImage)
	pods[4] = pod(4, newImage, func(p *Pod) {
		p.ChangedAt, p.ChangedTo, p.Ready, p.InService = now.Add(-time.Minute), newImage, false, false
	})
	in := input(pods...)
	in.Done = map[string]bool{"db-4": true}
	if p := Make(in); !p.Unready || p.Verdict.State == health.Failed {
		t.Errorf("db-4 through, then unready: unready %v, verdict %+v; want evidence, no failure yet", p.Unready, p.Verdict)
	}
	if p := Make(input(five(oldImage)...)); p.Unready {
		t.Error("nothing changed, yet unready")
	}
	byID := five(newImage)
	for i := range byID {
		byID[i].Running = "sha256:" + strings.Repeat("c", 64)
	}
	if p := Make(input(byID...)); p.Verdict.State != health.Healthy {
		t.Errorf("pods created on the image, reported by ID: %+v", p.Verdict)
	}
}

// Past the health timeout a slow upgrade of many pods goes on: the pod being changed right now,
// well inside its own readiness timeout, is no evidence against the version. Only a pod through
// this step that is not ready again, or a change older than its own timeout, is.
func TestAPodOnItsWayIsNoEvidence(t *testing.T) {
	pods := five(oldImage)
	pods[4] = pod(4, newImage, func(p *Pod) { p.ChangedAt, p.ChangedTo = now.Add(-20*time.Minute), newImage })
	pods[3] = pod(3, oldImage, drained(now.Add(-40*time.Second)), changed(newImage, now.Add(-30*time.Second)))
	in := input(pods...)
	in.Done = map[string]bool{"db-4": true}
	if p := Make(in); p.Unready || p.Verdict.State != health.Progressing {
		t.Errorf("db-3 changed 30s ago, its timeout 2m: unready %v, verdict %+v; want no evidence", p.Unready, p.Verdict)
	}
	// A change of an earlier step, older than its timeout, that is not ready is evidence.
	pods[3] = pod(3, newImage, func(p *Pod) {
		p.ChangedAt, p.ChangedTo, p.Ready, p.InService = now.Add(-3*time.Minute), newImage, false, false
	})
	in = input(pods...)
	in.Since, in.Done = now.Add(-time.Minute), map[string]bool{"db-4": true}
	if p := Make(in); !p.Unready {
		t.Errorf("db-3 changed 3m ago in an earlier step, not ready: unready %v; want evidence", p.Unready)
	}
}

// A rollback is decided before the renderer writes the old image back into the template: in
// between, the pod that failed (out of its Service, never ready) is held out, not put back only to
// be drained again once the template has the image; then it is changed back at once.
func TestAFailedPodWaitsOutOfServiceForTheRolledBackTemplate(t *testing.T) {
	pods := five(oldImage)
	pods[4] = pod(4, newImage, drained(now.Add(-40*time.Second)), changed(newImage, now.Add(-30*time.Second)))
	in := input(pods...)
	in.Image, in.Backward, in.Move = oldImage, true, false
	if p := Make(in); actions(p) != "" || p.Next != Poll || states(p) != "db-2=Done db-3=Done db-4=Draining" || p.Verdict.State != health.Progressing {
		t.Errorf("template still on the failed image: actions %q, next %v, states %q, verdict %+v; want db-4 kept out, looked at again soon",
			actions(p), p.Next, states(p), p.Verdict)
	}
	// A template that does not come back (someone keeps another image in it): looked at slowly.
	later := in
	later.Now = now.Add(in.Timeout)
	if p := Make(later); actions(p) != "" || p.Next != HeldPoll {
		t.Errorf("held for its readiness timeout: actions %q, next %v; want a look every %v", actions(p), p.Next, HeldPoll)
	}
	in.Move = true
	if p := Make(in); actions(p) != "Change db-4" {
		t.Errorf("template back on the old image: actions %q, want db-4 changed back at once", actions(p))
	}
}

// What the planner holds back, one case each: a pod being deleted takes the only place out of
// service; a failed upgrade changes no further pod, even one drained and past its grace; no pod
// leaves its Service while the template lacks the image; 0 replicas says so.
func TestThePlanHoldsBack(t *testing.T) {
	deleting := five(oldImage)
	deleting[4].Deleting = true
	if p := Make(input(deleting...)); actions(p) != "" {
		t.Errorf("db-4 terminating: actions %q, want none (it is out of service)", actions(p))
	}

	failing := five(oldImage)
	failing[4] = pod(4, newImage, drained(now.Add(-4*time.Minute)), changed(newImage, now.Add(-3*time.Minute)))
	failing[3] = pod(3, oldImage, drained(now.Add(-time.Minute)))
	in := input(failing...)
	in.MaxUnavailable = 2
	if p := Make(in); p.Verdict.State != health.Failed || strings.Contains(actions(p), "Change") {
		t.Errorf("db-4 failed, db-3 drained past its grace: verdict %+v, actions %q; want failed, db-3 not changed", p.Verdict, actions(p))
	}

	in = input(five(oldImage)...)
	in.Move = false
	if p := Make(in); actions(p) != "" {
		t.Errorf("template without the image: actions %q, want no pod drained", actions(p))
	}

	in = input()
	in.End = 0
	if p := Make(in); p.Verdict.Reason != health.ReasonScaledToZero {
		t.Errorf("0 replicas: %+v, want %s", p.Verdict, health.ReasonScaledToZero)
	}
}
