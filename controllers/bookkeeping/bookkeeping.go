// Package bookkeeping updates the record a RollingUpgradeConfig keeps of its rollouts: current
// version, failed versions, consecutive rollbacks, circuit breaker and history. Each function changes
// only the status it is given.
package bookkeeping

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A rollout is identified by its version and start time. Recording the same rollout twice (the
// controller crashed between writing status and annotations, and decides again) changes nothing:
// Success and Rollback report false then.

// Success records a version that passed its health check: it becomes the current version, the
// rollback counter restarts and the circuit closes.
func Success(st *v1alpha1.RollingUpgradeConfigStatus, version, image string, appliedAt metav1.Time) (recorded bool) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultHealthy) {
		return false
	}
	st.CurrentVersion = version
	st.CurrentImage = image
	st.RollbackCount = 0
	st.CircuitOpen = false
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt, Status: v1alpha1.ResultHealthy})
	return true
}

// Rollback records a version that failed its health check: it joins the failed list (once), the
// counter goes up, and the circuit opens when the counter reaches maxRollbacks. It reports whether
// the rollback was recorded and whether it opened the circuit.
func Rollback(st *v1alpha1.RollingUpgradeConfigStatus, version, image string, appliedAt metav1.Time, maxRollbacks int32) (recorded, opened bool) {
	if lastIs(st, version, appliedAt, v1alpha1.ResultRolledBack) {
		return false, false
	}
	if !slices.Contains(st.FailedVersions, version) {
		st.FailedVersions = append(st.FailedVersions, version)
	}
	st.RollbackCount++
	appendHistory(st, v1alpha1.VersionHistoryEntry{Version: version, Image: image, AppliedAt: appliedAt, Status: v1alpha1.ResultRolledBack})
	if !st.CircuitOpen && st.RollbackCount >= max(maxRollbacks, 1) {
		st.CircuitOpen = true
		return true, true
	}
	return true, false
}

func lastIs(st *v1alpha1.RollingUpgradeConfigStatus, version string, appliedAt metav1.Time, result v1alpha1.RolloutResult) bool {
	n := len(st.VersionHistory)
	if n == 0 {
		return false
	}
	e := st.VersionHistory[n-1]
	return e.Version == version && e.AppliedAt.Equal(&appliedAt) && e.Status == result
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
