// Package bookkeeping updates the record a RollingUpgradeConfig keeps of its rollouts: current
// version, failed versions, consecutive rollbacks, circuit breaker and history. Each function changes
// only the status it is given.
package bookkeeping

import (
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A rollout is identified by its version and start time. Recording the same rollout twice (the
// controller crashed between writing status and annotations, and decides again) changes nothing:
// Success and Rollback report false then.

// Success records a version that passed its health check: its image becomes the current image, the
// rollback counter restarts and the circuit closes. current is the image's tag when the config's
// rules read it as a version, which becomes the current version; an image pinned by digest or a
// tag such as main leaves the current version as it was, so automatic updates resume from it once
// the pin goes. forcedDown: current is older than the version it replaces, forced by a person;
// that newer version goes on the failed list, so that it does not come back by itself.
func Success(st *v1alpha1.RollingUpgradeConfigStatus, version, current, image string, appliedAt metav1.Time, forcedDown bool, order Order) (recorded bool) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultHealthy) {
		return false
	}
	entry := v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt, Status: v1alpha1.ResultHealthy}
	if replaced := st.CurrentVersion; replaced != "" && current != "" && forcedDown {
		// A person forced an older version: the newer one it replaced must not come back by itself.
		if !slices.Contains(st.FailedVersions, replaced) {
			st.FailedVersions = append(st.FailedVersions, replaced)
			capFailed(st, order)
		}
		entry.Reason = "replaced " + replaced + " by hand, which is now on the failed list"
	}
	if current != "" {
		st.CurrentVersion = current
	}
	st.CurrentImage = image
	st.RollbackCount = 0
	st.CircuitOpen = false
	appendHistory(st, entry)
	return true
}

// Rollback records a version that failed its health check: it joins the failed list (once), the
// counter goes up, and the circuit opens when the counter reaches maxRollbacks. It reports whether
// the rollback was recorded and whether it opened the circuit. reason, when not empty, goes into
// the history entry: what failed beyond readiness (an analysis).
func Rollback(st *v1alpha1.RollingUpgradeConfigStatus, version, image, reason string, appliedAt metav1.Time, maxRollbacks int32, order Order) (recorded, opened bool) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultRolledBack) {
		return false, false
	}
	if !slices.Contains(st.FailedVersions, version) {
		st.FailedVersions = append(st.FailedVersions, version)
		capFailed(st, order)
	}
	st.RollbackCount++
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt, Status: v1alpha1.ResultRolledBack, Reason: reason})
	if !st.CircuitOpen && st.RollbackCount >= max(maxRollbacks, 1) {
		st.CircuitOpen = true
		return true, true
	}
	return true, false
}

// AdoptFailed adds versions that failed in an earlier life of the config (its record in Git) to the
// failed list, within v1alpha1.MaxFailedVersions; it reports whether the list changed.
func AdoptFailed(st *v1alpha1.RollingUpgradeConfigStatus, versions []string, order Order) bool {
	n := len(st.FailedVersions)
	for _, v := range versions {
		if !slices.Contains(st.FailedVersions, v) {
			st.FailedVersions = append(st.FailedVersions, v)
		}
	}
	if len(st.FailedVersions) == n {
		return false
	}
	capFailed(st, order)
	return true
}

// Abandon records a rollout a person ended before its verdict: a history entry, nothing else.
func Abandon(st *v1alpha1.RollingUpgradeConfigStatus, version, image string, appliedAt metav1.Time) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultAbandoned) {
		return
	}
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt, Status: v1alpha1.ResultAbandoned})
}

// Withdraw records a GitFirst rollout whose image never reached the workload: a history entry
// saying why, nothing else (the version was not judged).
func Withdraw(st *v1alpha1.RollingUpgradeConfigStatus, version, image string, appliedAt metav1.Time, why string) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultWithdrawn) {
		return
	}
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt,
		Status: v1alpha1.ResultWithdrawn, Reason: why})
}

// Reject records a version a person rejected: it joins the failed list (once) without a rollout,
// and the history says who and why. It is no rollback: the counter and the circuit stay.
func Reject(st *v1alpha1.RollingUpgradeConfigStatus, version, image, by, reason string, at metav1.Time, order Order) {
	if !slices.Contains(st.FailedVersions, version) {
		st.FailedVersions = append(st.FailedVersions, version)
		capFailed(st, order)
	}
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: at, Status: v1alpha1.ResultRejected,
		RequestedBy: by, Reason: reason})
}

// Retry takes a version off the failed list at a person's request, and the history says who. It
// reports false, changing nothing, for a version not on the list. The circuit stays as it is.
func Retry(st *v1alpha1.RollingUpgradeConfigStatus, version, image, by string, at metav1.Time) bool {
	i := slices.Index(st.FailedVersions, version)
	if i < 0 {
		return false
	}
	if st.FailedVersions = slices.Delete(st.FailedVersions, i, i+1); len(st.FailedVersions) == 0 {
		st.FailedVersions = nil
	}
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: at, Status: v1alpha1.ResultRetried, RequestedBy: by})
	return true
}

// Order compares two versions by a config's rules, newest last (version.Policy.Compare); ok is
// false when it cannot read one of them. Nil compares them as semver.
type Order func(a, b string) (c int, ok bool)

// semverOrder compares two semver versions.
func semverOrder(a, b string) (int, bool) {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return 0, false
	}
	return va.Compare(vb), true
}

// capFailed keeps the failed list within v1alpha1.MaxFailedVersions. Versions at or below the
// current version by the config's order go first (they are never candidates: only newer versions
// are), oldest version first; then the oldest entries. Each dropped version is counted.
func capFailed(st *v1alpha1.RollingUpgradeConfigStatus, order Order) {
	excess := len(st.FailedVersions) - v1alpha1.MaxFailedVersions
	if excess <= 0 {
		return
	}
	if order == nil {
		order = semverOrder
	}
	var below []string
	for _, f := range st.FailedVersions {
		if c, ok := order(f, st.CurrentVersion); ok && c <= 0 {
			below = append(below, f)
		}
	}
	slices.SortStableFunc(below, func(a, b string) int { c, _ := order(a, b); return c })
	drop := map[string]bool{}
	for _, f := range below[:min(excess, len(below))] {
		drop[f] = true
	}
	for _, f := range st.FailedVersions {
		if len(drop) == excess {
			break
		}
		drop[f] = true
	}
	st.FailedVersions = slices.DeleteFunc(st.FailedVersions, func(f string) bool { return drop[f] })
	st.FailedVersionsDropped += int32(excess)
}

func lastIs(st *v1alpha1.RollingUpgradeConfigStatus, version string, appliedAt metav1.Time, result v1alpha1.RolloutResult) bool {
	v, r, ok := Recorded(st, appliedAt.Time)
	return ok && v == version && r == result
}

// Recorded is what the history's newest rollout entry (LastRollout) says of the rollout started
// at appliedAt: its version and result. ok is false when that entry is of another rollout (or there
// is none): the rollout has no record yet.
func Recorded(st *v1alpha1.RollingUpgradeConfigStatus, appliedAt time.Time) (version string, result v1alpha1.RolloutResult, ok bool) {
	e := LastRollout(st)
	if e == nil || !e.AppliedAt.Time.Equal(appliedAt) {
		return "", "", false
	}
	return e.Version, e.Status, true
}

// LastRollout is the history's newest entry of a rollout, or nil. It passes over the entries of
// requests (Rejected, Retried): they are no verdict on a rollout, and one written in the second a
// rollout started would otherwise read as that rollout's record, as the history keys rollouts by
// that second.
func LastRollout(st *v1alpha1.RollingUpgradeConfigStatus) *v1alpha1.VersionHistoryEntry {
	for i := len(st.VersionHistory) - 1; i >= 0; i-- {
		if e := &st.VersionHistory[i]; !isRequest(e) {
			return e
		}
	}
	return nil
}

// Rollouts is the history without the entries of requests, oldest first (a copy).
func Rollouts(st *v1alpha1.RollingUpgradeConfigStatus) []v1alpha1.VersionHistoryEntry {
	return slices.DeleteFunc(slices.Clone(st.VersionHistory), func(e v1alpha1.VersionHistoryEntry) bool { return isRequest(&e) })
}

// isRequest: the entry records a person's reject or retry, not a rollout.
func isRequest(e *v1alpha1.VersionHistoryEntry) bool {
	return e.Status == v1alpha1.ResultRejected || e.Status == v1alpha1.ResultRetried
}

// ResetCircuit closes the circuit after a human asked for it. Failed versions stay failed.
func ResetCircuit(st *v1alpha1.RollingUpgradeConfigStatus) {
	st.RollbackCount = 0
	st.CircuitOpen = false
}

// appendHistory adds an entry, newest last, and drops the oldest beyond v1alpha1.MaxHistory.
func appendHistory(st *v1alpha1.RollingUpgradeConfigStatus, e v1alpha1.VersionHistoryEntry) {
	st.VersionHistory = append(st.VersionHistory, e)
	if n := len(st.VersionHistory) - v1alpha1.MaxHistory; n > 0 {
		st.VersionHistory = slices.Clone(st.VersionHistory[n:])
	}
}
