package rollout

import (
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Annotations is the in-flight state kept in the config's annotations, read once (AnnotationsOf);
// "" and the zero time mean absent.
type Annotations struct {
	TargetImage string
	Step        Step
	// UpdateStarted is when the step in flight started; a check's pauses move it on.
	UpdateStarted time.Time
	// CheckPaused is when a health check stopped being judged because its workload could not be
	// (missing, blocked, or bound to another config); the health timer does not run meanwhile.
	CheckPaused time.Time

	// unreadStarted and unreadPaused keep a value of those annotations that is not an RFC 3339
	// time, as it was found: it is written back unchanged, and a check stalls on it (healthCheck).
	unreadStarted, unreadPaused string
}

// AnnotationsOf reads the in-flight state of a config.
func AnnotationsOf(cfg *v1alpha1.RollingUpgradeConfig) Annotations {
	a := cfg.GetAnnotations()
	out := Annotations{TargetImage: a[v1alpha1.TargetImageAnnotation], Step: a[v1alpha1.UpdatePhaseAnnotation]}
	out.UpdateStarted, out.unreadStarted = readStamp(a[v1alpha1.UpdateStartedAnnotation])
	out.CheckPaused, out.unreadPaused = readStamp(a[v1alpha1.CheckPausedAnnotation])
	return out
}

// readStamp reads an instant kept in an annotation; a value that is no RFC 3339 time comes back
// as it is, with the zero time.
func readStamp(s string) (time.Time, string) {
	if s == "" {
		return time.Time{}, ""
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.IsZero() { // the zero time is what absent reads as
		return time.Time{}, s
	}
	return stamp(t), ""
}

// stamp is t as an annotation keeps it: in UTC, to the second.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

func stampText(t time.Time, unread string) string {
	if t.IsZero() {
		return unread
	}
	return t.Format(time.RFC3339)
}

// Paused reports whether the health timer is paused: the check-paused annotation is there, even
// with a value that does not read.
func (a Annotations) Paused() bool { return !a.CheckPaused.IsZero() || a.unreadPaused != "" }

// Values maps each annotation key to its value ("" = remove it).
func (a Annotations) Values() map[string]string {
	return map[string]string{
		v1alpha1.TargetImageAnnotation:   a.TargetImage,
		v1alpha1.UpdatePhaseAnnotation:   a.Step,
		v1alpha1.UpdateStartedAnnotation: stampText(a.UpdateStarted, a.unreadStarted),
		v1alpha1.CheckPausedAnnotation:   stampText(a.CheckPaused, a.unreadPaused),
	}
}
