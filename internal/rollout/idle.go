package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/version"
	"github.com/rollgate/rollgate/internal/window"
)

// idle decides whether to start a rollout, and if not, why. Each step handles what it cannot know
// first and returns false when the decision is made.
func idle(d *Decision, in Input) {
	policy, calendar, ok := parseSpec(d, in)
	if !ok || !analysisReady(d, in) {
		return
	}
	w, ok := checkWorkload(d, in)
	if !ok {
		return
	}
	// A config that writes back records nothing before its record in Git was read: the record may
	// list versions that failed, which a target set by hand must not start again.
	if !gitRecordRead(d, in) {
		return
	}
	recordFirstSight(d, in, w)
	if !handTarget(d, in, w) || !pinned(d) || !recorded(d, w) || fromGit(d, in, w) || !sourcesRead(d, in) {
		return
	}
	choice := choose(d, in, policy)
	if len(d.Needs) > 0 {
		return // the choice may change with the build times
	}
	gate(d, in, w, calendar, choice)
}

// parseSpec parses the constraint and the calendar (calendarOf); a bad one stalls the config.
func parseSpec(d *Decision, in Input) (*version.Policy, *window.Calendar, bool) {
	if d.policyErr != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "%v", d.policyErr)
		return nil, nil, false
	}
	policy := d.policy
	calendar, err := calendarOf(in)
	if err != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "%v", err)
		return nil, nil, false
	}
	return policy, calendar, true
}

// calendarOf is the config's calendar: the maintenance window, spec.windows and the windows of
// the RolloutCalendars that pick the config, each RolloutCalendar a group of its own.
func calendarOf(in Input) (*window.Calendar, error) {
	spec, now := in.Config.Spec, in.Now
	var rules []window.Rule
	if mw := spec.MaintenanceWindow; mw != nil {
		win, err := window.Parse(mw.Schedule, v1alpha1.DurationOrZero(mw.Duration), mw.TimeZone)
		if err == nil {
			err = win.Check(now)
		}
		if err != nil {
			return nil, fmt.Errorf("spec.maintenanceWindow: %w", err)
		}
		rules = append(rules, window.Rule{Every: win})
	}
	for _, cw := range spec.Windows {
		r, err := calendarRule(cw, cw.Name, now)
		if err != nil {
			return nil, fmt.Errorf("spec.windows[%s]: %w", cw.Name, err)
		}
		rules = append(rules, r)
	}
	for _, cal := range in.Calendars {
		for _, cw := range cal.Spec.Windows {
			r, err := calendarRule(cw, cw.Name+" of RolloutCalendar "+cal.Name, now)
			r.Group = cal.Name // its allow windows bind the config, whatever its own say
			if err != nil {
				return nil, fmt.Errorf("RolloutCalendar %s, window %s: %w (the cluster admin's: until it is fixed, no version starts)", cal.Name, cw.Name, err)
			}
			rules = append(rules, r)
		}
	}
	return window.NewCalendar(rules...), nil
}

// calendarRule is the rule of one calendar window, named name in messages.
func calendarRule(cw v1alpha1.CalendarWindow, name string, now time.Time) (window.Rule, error) {
	r := window.Rule{Name: name, Deny: cw.Type == v1alpha1.WindowDeny}
	var err error
	switch {
	case cw.Schedule != "":
		r.Every, err = window.Parse(cw.Schedule, v1alpha1.DurationOrZero(cw.Duration), cw.TimeZone)
		if err == nil {
			err = r.Every.Check(now)
		}
	case cw.Start != nil && cw.End != nil && cw.Start.Before(cw.End):
		r.From, r.To = cw.Start.Time, cw.End.Time
	default:
		err = errors.New("a window is either recurring (schedule and duration) or one-off (start before end)")
	}
	return r, err
}

// recordFirstSight records the image of a healthy workload seen for the first time: the image a
// rollback returns to. Its version is recorded only when its tag is semver; a workload on a digest
// or a tag such as main-abc1234 gets no automatic update until a person picks a version.
func recordFirstSight(d *Decision, in Input, w *Workload) {
	st := &d.Status
	if st.CurrentImage != "" && st.CurrentVersion == "" {
		// Recorded before the config's rules read its tag (a tag policy given since): adopted.
		st.CurrentVersion = d.versionOf(st.CurrentImage)
	}
	target := d.Annotations.TargetImage
	if st.CurrentImage != "" || w.Verdict.State != health.Healthy || (target != "" && !image.Renders(w.Image, target)) {
		return
	}
	d.recordRunning(w.Image)
	rt := RecordedTargetOf(in.Config.Spec)
	st.RecordedTarget = &rt
}

// recordRunning records img, which the workload runs, as the current image; its version only when
// the config's rules read its tag.
func (d *Decision) recordRunning(img string) {
	d.Status.CurrentImage, d.Status.CurrentVersion = img, d.versionOf(img)
}

// gitRecordRead: a config that writes back to Git starts nothing before its record there was read
// once (status.gitWriteBack is set by the write that reads it). A config applied again to a rebuilt
// cluster knows the versions that failed in its earlier life only from that record; without it the
// first reconcile would try one of them again.
func gitRecordRead(d *Decision, in Input) bool {
	ref := in.Config.Spec.GitWriteBack
	if ref == nil || d.Status.GitWriteBack != nil {
		return true
	}
	d.Status.Phase = restingPhase(&d.Status)
	d.progressing(v1alpha1.ReasonAwaitingGitRecord, "waiting to read this config's record in Git (GitWriteBack %s, condition %s): the versions that failed before count",
		ref.Name, v1alpha1.ConditionGitWriteBack)
	return false
}

// handTarget starts a target-image set by hand that differs from the current image, within the
// rules that bind every rollout: not while suspended, not with the circuit open, not a version that
// failed before. A refused target is not rendered either (see RenderImage).
func handTarget(d *Decision, in Input, w *Workload) bool {
	st := &d.Status
	target := d.Annotations.TargetImage
	if target == "" || image.Renders(st.CurrentImage, target) {
		return true
	}
	if problem := handTargetProblem(st, in.Config.Spec, target); problem != "" {
		d.rest()
		d.stalledAbout(d.nameOf(target), v1alpha1.ReasonTargetRefused, "%s=%s is not applied: %s", v1alpha1.TargetImageAnnotation, target, problem)
		return false
	}
	if blocked(d, w) {
		return false
	}
	start(d, in, target, "set by hand in "+v1alpha1.TargetImageAnnotation)
	return false
}

// handTargetProblem says why a target-image set by hand may not start, or "". st is the status as
// decided so far (a circuit reset in the same decision counts).
func handTargetProblem(st *v1alpha1.RollingUpgradeConfigStatus, spec v1alpha1.RollingUpgradeConfigSpec, target string) string {
	switch ver := ImageVersion(spec, target); {
	case spec.Suspend:
		return "spec.suspend is set; unset it to roll out " + ver
	case st.CircuitOpen:
		return "the circuit breaker is open; set annotation " + v1alpha1.ResetCircuitAnnotation + " to a new value to roll out " + ver
	case slices.Contains(st.FailedVersions, ver):
		return ver + " failed its health check before (status.failedVersions); remove it from that list to try it again"
	case spec.GitWriteBack.GitFirst() && strings.Contains(target, "@"):
		// Git gets a tag: a digest could not be committed, and the workload would never run it.
		return "spec.gitWriteBack.mode is GitFirst, and Git takes a tag, not a digest: set a tag, or change the mode to ClusterFirst to pin by digest"
	}
	return ""
}

// pinned: a target-image that names no version the config's rules read (a digest, or a tag such as
// main) turns automatic updates off until the annotation is removed.
func pinned(d *Decision) bool {
	st := &d.Status
	target := d.Annotations.TargetImage
	if target == "" || d.versionOf(target) != "" {
		return true
	}
	d.rest()
	d.ready(v1alpha1.ReasonPinned, "%s pins %s: automatic updates are off until the annotation is removed%s",
		v1alpha1.TargetImageAnnotation, target, sinceNote(st.CurrentVersion))
	return false
}

func sinceNote(current string) string {
	if current == "" {
		return ""
	}
	return "; they resume from " + current
}

// recorded: without a recorded healthy image nothing can be compared, nor rolled back to.
func recorded(d *Decision, w *Workload) bool {
	if d.Status.CurrentImage != "" {
		return true
	}
	if !blocked(d, w) {
		d.waiting(v1alpha1.ReasonWorkloadNotHealthy, "waiting for %s to be healthy to record the version it runs (%s)",
			w.Description, w.Verdict.Message)
	}
	return false
}

// sourcesRead: a config must not act on part of its signals.
func sourcesRead(d *Decision, in Input) bool {
	p := in.SourceProblem
	if p == nil {
		return true
	}
	if p.Terminal {
		d.stalled(p.Reason, "%s", p.Message)
	} else {
		d.waiting(p.Reason, "%s", p.Message)
	}
	return false
}

// choice is the best eligible candidate and what was ignored on the way.
type choice struct {
	tag     string
	ignored string
	// held is a better candidate that is too young (spec.minReleaseAge), and age what says so.
	held string
	age  *releaseAge
}

// choose picks the best eligible candidate and records it as available. A config whose current
// image has no version its rules read compares nothing: every candidate counts as newer, which
// could be a downgrade, so the gate holds it.
func choose(d *Decision, in Input, policy *version.Policy) choice {
	st := &d.Status
	tags := make([]string, 0, len(in.Candidates))
	for _, c := range in.Candidates {
		tags = append(tags, c.Tag)
	}
	// A current version that is not semver (a digest an older status holds) compares nothing; the
	// gate then holds the choice.
	age := newReleaseAge(in, st, policy)
	var hold func(string) bool
	if age != nil {
		hold = age.hold
	}
	ch := policy.ChooseHeld(tags, st.CurrentVersion, st.FailedVersions, hold)
	if age != nil {
		age.record(st)
		if tags := age.wanted(ch.Tag); len(tags) > 0 {
			d.need(BuildTimes{Tags: tags})
		}
	} else {
		st.SeenVersions = nil // first sights count only while the config asks for an age
	}
	// lastCheck moves only when the answer changes: a poll or an event that finds the same answer
	// does not rewrite the config.
	if st.LastCheck == nil || ch.Tag != d.old.AvailableVersion {
		now := metav1.NewTime(in.Now)
		st.LastCheck = &now
	}
	if ch.Tag != "" && ch.Tag != d.old.AvailableVersion {
		d.eventAbout(ch.Tag, WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionAvailable, "%s is available (current: %s)", ch.Tag, orNone(st.CurrentVersion))
	}
	st.AvailableVersion = ch.Tag
	// Tags the rules cannot read are named, so that a person sees why an announced tag does
	// nothing; those a filter leaves out are left out on purpose.
	var unread []string
	for _, s := range ch.Skipped {
		if s.Reason == version.SkipNotSemver || s.Reason == version.SkipNotANumber {
			unread = append(unread, s.Tag)
		}
	}
	why := "not semver"
	if !policy.Semver() {
		why = "not read by spec.tagPolicy"
	}
	return choice{tag: ch.Tag, ignored: describeIgnored(why, unread, in.Candidates), held: ch.Held, age: age}
}

// justCompleted: Ready is still the verdict of the last rollout, for this generation of the spec.
func justCompleted(d *Decision) bool {
	r := apimeta.FindStatusCondition(d.Status.Conditions, meta.ReadyCondition)
	return r != nil && r.Status == metav1.ConditionTrue && r.Reason == v1alpha1.EventUpdateComplete &&
		r.ObservedGeneration == d.Status.ObservedGeneration
}
