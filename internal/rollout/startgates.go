package rollout

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/window"
)

// chosen is the version a config would start, with what its gates read.
type chosen struct {
	choice
	in       Input
	w        *Workload
	calendar *window.Calendar
	// image is what a start of it renders: repo:tag, or pinned by the digest the registry
	// resolved (imageLookedUp).
	image string
}

// startGate holds the chosen version, or lets it on to the next gate: it reports whether it
// decided (and then wrote why into the decision).
type startGate func(d *Decision, c *chosen) bool

// startGates are the gates of a chosen version, in order: the first that holds it decides, and a
// version that passes them all starts. What the config and its status tell comes first; the
// gates that ask the world (Prometheus for freezes, the registry, the calendars' slots) come
// last, so that they are asked only for a version about to start.
var startGates = []startGate{
	suspended, unversioned, tooYoung, nothingNewer, circuitOpen, unapproved, windowClosed, checkDoesNotFit,
	workloadUnhealthy, withdrawnRecently, gitUnwritable, jitter, frozen, imageLookedUp, unsigned, noSlot,
}

// gate starts the chosen version, unless a start gate holds it.
func gate(d *Decision, in Input, w *Workload, calendar *window.Calendar, ch choice) {
	c := &chosen{choice: ch, in: in, w: w, calendar: calendar, image: in.Config.Spec.Image + ":" + ch.tag}
	for _, held := range startGates {
		if held(d, c) {
			return
		}
	}
	why := "from " + sourcesOf(c.tag, in.Candidates)
	if needsApproval(in.Config.Spec.Approval, d.policy.Semver(), d.Status.CurrentVersion, c.tag, "") {
		why += ", approved in " + v1alpha1.ApproveAnnotation + byWhom(in.Config.GetAnnotations()[v1alpha1.ApprovedByAnnotation])
	}
	if c.held != "" {
		why += "; the newer " + c.age.releaseNote(c.held)
	}
	if c.image != in.Config.Spec.Image+":"+c.tag {
		why += "; pinned to the digest the registry resolved"
	}
	if v := in.Config.Spec.Verify; v != nil && v.Cosign != nil {
		why += ", signed by " + signer(v.Cosign)
	}
	start(d, in, c.image, why)
}

func suspended(d *Decision, c *chosen) bool {
	if !c.in.Config.Spec.Suspend {
		return false
	}
	d.rest()
	d.Status.Phase = v1alpha1.PhaseSuspended
	d.ready(v1alpha1.ReasonSuspended, "spec.suspend is set: no automatic rollout%s", availableNote(c.tag))
	return true
}

// unversioned: a current version the config's rules do not read compares nothing, so every
// candidate would count as newer, which could be a downgrade. A followed tag's digests have no
// order to go down: the digest it names is the one to run. But a workload on the bare followed
// tag runs a build nobody knows, and a rollback to the bare tag is no rollback: the kubelet may
// pull the failed build again under it, and the build that failed still reads as the tag.
func unversioned(d *Decision, c *chosen) bool {
	st := &d.Status
	if d.follow != "" {
		tag, digest := image.Tag(st.CurrentImage), image.Digest(st.CurrentImage)
		if tag == "" && digest == "" {
			tag = "latest" // what the kubelet pulls for an image without a tag
		}
		if tag != d.follow || digest != "" {
			return false
		}
		d.rest()
		d.ready(v1alpha1.ReasonUnversioned, "%s runs %s, the bare tag spec.followTag follows: no build rollgate could roll back to. "+
			"Pin the build it runs by digest (in Git, or annotation %s=%s:%s@sha256:<digest>); then each new digest of %s rolls out%s",
			c.w.Description, st.CurrentImage, v1alpha1.TargetImageAnnotation, c.in.Config.Spec.Image, d.follow, d.follow, availableNote(c.tag))
		return true
	}
	if st.CurrentVersion != "" && d.policy.Reads(st.CurrentVersion) {
		return false
	}
	d.rest()
	kind := "semver version"
	if !d.policy.Semver() {
		kind = "version spec.tagPolicy and spec.filterTags read"
	}
	d.ready(v1alpha1.ReasonUnversioned, "%s runs %s, which has no "+kind+" to compare with: no automatic update until a person "+
		"picks a version (annotation %s=%s:<version>)%s", c.w.Description, st.CurrentImage, v1alpha1.TargetImageAnnotation,
		c.in.Config.Spec.Image, availableNote(c.tag))
	return true
}

// tooYoung: the only newer version is younger than spec.minReleaseAge.
func tooYoung(d *Decision, c *chosen) bool {
	if c.tag != "" || c.held == "" || d.Status.CircuitOpen {
		return false
	}
	awaitReleaseAge(d, c.age, c.held, c.in.Now)
	return true
}

func nothingNewer(d *Decision, c *chosen) bool {
	if c.tag != "" {
		return false
	}
	st := &d.Status
	d.rest()
	switch {
	case st.CircuitOpen:
		d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
	case c.ignored == "" && justCompleted(d):
		// "running <version>" from the verdict says it all; no write to say it again.
	default:
		d.ready(v1alpha1.ReasonUpToDate, "running %s; no newer eligible version%s", orNone(st.CurrentVersion), c.ignored)
	}
	return true
}

func circuitOpen(d *Decision, c *chosen) bool {
	st := &d.Status
	if !st.CircuitOpen {
		return false
	}
	if d.old.Phase != v1alpha1.PhaseFailed || d.old.AvailableVersion != c.tag {
		d.eventAbout(c.tag, WriteStatus, corev1.EventTypeWarning, v1alpha1.EventVersionAvailableCircuitOpen, "%s", circuitMessage(st, c.tag))
	}
	d.rest()
	d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, c.tag))
	return true
}

func unapproved(d *Decision, c *chosen) bool {
	cfg := c.in.Config
	if !needsApproval(cfg.Spec.Approval, d.policy.Semver(), d.Status.CurrentVersion, c.tag, cfg.GetAnnotations()[v1alpha1.ApproveAnnotation]) {
		return false
	}
	awaitApproval(d, cfg, c.tag, c.in.Now)
	return true
}

func windowClosed(d *Decision, c *chosen) bool {
	if c.calendar.Open(c.in.Now) {
		return false
	}
	heldByCalendar(d, c.in, c.tag, c.calendar.At(c.in.Now))
	return true
}

func checkDoesNotFit(d *Decision, c *chosen) bool {
	return c.in.Config.Spec.CheckFitsWindow && !checkFits(d, c.in, c.calendar, c.tag)
}

// workloadUnhealthy: never start on a broken workload, whose failure would be blamed on the new
// version.
func workloadUnhealthy(d *Decision, c *chosen) bool {
	w := c.w
	if w.Verdict.State == health.Healthy {
		return false
	}
	d.rest()
	if !blocked(d, w) {
		d.waiting(v1alpha1.ReasonWorkloadNotHealthy, "%s is not healthy (%s); %s waits until it is", w.Description, w.Verdict.Message, c.tag)
	}
	return true
}

func withdrawnRecently(d *Decision, c *chosen) bool {
	retry := retryAfterWithdrawals(c.in.Config, &d.Status)
	if !c.in.Now.Before(retry) {
		return false
	}
	d.rest()
	heldAfterWithdrawals(d, c.in, c.tag, retry)
	return true
}

// gitUnwritable: a GitFirst rollout is a commit, so it waits for Git (the write-back warned of its
// failure).
func gitUnwritable(d *Decision, c *chosen) bool {
	st := &d.Status
	if !gitFirst(c.in.Config) || !gitFailing(st) {
		return false
	}
	d.rest()
	d.progressing(v1alpha1.EventGitWriteBackFailed, "%s waits until Git can be written: a rollout of this config is a commit%s", c.tag, gitNote(st))
	return true
}

func jitter(d *Decision, c *chosen) bool { return staggered(d, c.in, c.calendar, c.tag) }

func frozen(d *Decision, c *chosen) bool { return frozenWhile(d, c.in, c.tag) }

func imageLookedUp(d *Decision, c *chosen) bool {
	img, ok := imageChecked(d, c.in, c.tag)
	c.image = img
	return !ok
}

func unsigned(d *Decision, c *chosen) bool { return !signed(d, c) }

func noSlot(d *Decision, c *chosen) bool { return !slotsTaken(d, c.in, c.tag) }
