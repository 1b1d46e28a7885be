package v1alpha1

// Event reasons. Each is emitted on a transition only, never on every reconcile.
const (
	EventVersionAvailable            = "VersionAvailable"            // a new best eligible version appeared
	EventVersionHeld                 = "VersionHeld"                 // a version waits for the maintenance window
	EventApprovalRequired            = "ApprovalRequired"            // a version waits for a person's approval (spec.approval)
	EventReleaseAgeRequired          = "ReleaseAgeRequired"          // a version waits until it is spec.minReleaseAge old
	EventRolloutSlotsTaken           = "RolloutSlotsTaken"           // a version waits for a slot of a RolloutCalendar (maxConcurrent)
	EventUpdateStarting              = "UpdateStarting"              // a version was applied; its health check runs
	EventUpdateComplete              = "UpdateComplete"              // the version passed its health check
	EventUpdateRollback              = "UpdateRollback"              // the version failed; rolling back
	EventRollbackComplete            = "RollbackComplete"            // the previous version is healthy again
	EventCircuitOpen                 = "CircuitOpen"                 // maxRollbacks reached; no more rollouts
	EventCircuitReset                = "CircuitReset"                // a human reset the circuit breaker
	EventVersionRejected             = "VersionRejected"             // a person rejected a version (rollgate.dev/reject): it is on the failed list
	EventVersionRetried              = "VersionRetried"              // a person took a version off the failed list (rollgate.dev/retry)
	EventRequestIgnored              = "RequestIgnored"              // a reject or retry names nothing it can act on; the annotation says what
	EventVersionAvailableCircuitOpen = "VersionAvailableCircuitOpen" // a version is available but the circuit is open
	EventInvalidSpec                 = "InvalidSpec"                 // the spec, an annotation or a source is invalid
	EventTargetNotFound              = "TargetNotFound"              // the workload does not exist
	EventSourceNotFound              = "SourceNotFound"              // a source object does not exist (yet)
	EventRegistryUnavailable         = "RegistryUnavailable"         // listing registry tags failed; retried with backoff
	EventFieldManagerConflict        = "FieldManagerConflict"        // another field manager keeps reverting the rendered image
	EventUpdateAbandoned             = "UpdateAbandoned"             // a person ended a health check before its verdict
	EventRollbackStuck               = "RollbackStuck"               // a rollback is not healthy after the health timeout
	EventReconcilePanic              = "ReconcilePanic"              // the manager failed on this config; it retries, others go on
	EventGitWriteBackFailed          = "GitWriteBackFailed"          // an outcome could not be written to Git; tried again (docs/operations.md)
	EventNotAppliedFromGit           = "NotAppliedFromGit"           // GitFirst: a committed image, or rollback, did not reach the workload in time
	EventFailedVersionFromGit        = "FailedVersionFromGit"        // GitFirst: Git brought back a version that failed (a commit of rollgate's reverted)
	EventAnalysisInconclusive        = "AnalysisInconclusive"        // a metric check could not measure; the verdict waits (spec.analysis)
	EventPodUpgraded                 = "PodUpgraded"                 // a pod runs the new image in place, ready and back in its Service
	EventPodUpgradeFailed            = "PodUpgradeFailed"            // a pod changed in place is not ready within spec.strategy.inPlace.podReadyTimeout
	EventUnansweredReadinessGate     = "UnansweredReadinessGate"     // on a StatefulSet: its template keeps rollgate's readiness gate with no in-place upgrade; rollgate answered it
)

// Condition reasons of RollingUpgradeConfig (besides the event reasons, which double as reasons of
// the conditions they cause).
const (
	ReasonUpToDate            = "UpToDate"            // running the best eligible version
	ReasonProgressing         = "Progressing"         // a health check is running
	ReasonRollingBack         = "RollingBack"         // a rollback is being watched
	ReasonWorkloadNotHealthy  = "WorkloadNotHealthy"  // no rollout starts on a broken workload
	ReasonUnversioned         = "Unversioned"         // the running image has no semver tag: no automatic updates
	ReasonTargetRefused       = "TargetRefused"       // a target-image set by hand breaks a rule (suspend, circuit, failed list)
	ReasonPinned              = "Pinned"              // target-image pinned by digest: no automatic updates
	ReasonSuspended           = "Suspended"           // spec.suspend
	ReasonNotSemver           = "NotSemver"           // an ApplicationVersion whose version is not semver
	ReasonNotATag             = "NotATag"             // an ApplicationVersion whose version cannot be an image tag
	ReasonValid               = "Valid"               // an ApplicationVersion whose version is usable
	ReasonWritten             = "Written"             // the last write put the status in Git (condition GitWriteBack; a GitWriteBack's Ready: every config's)
	ReasonUnused              = "Unused"              // a GitWriteBack that no config names (its Ready)
	ReasonAwaitingGitRecord   = "AwaitingGitRecord"   // a config that writes back reads its record in Git before any rollout
	ReasonAwaitingGitOps      = "AwaitingGitOps"      // GitFirst: the committed image has yet to reach the workload
	ReasonDriftedFromGit      = "DriftedFromGit"      // GitFirst: the workload runs a version Git brought that may not start now
	ReasonAwaitingApproval    = "AwaitingApproval"    // a version waits for rollgate.dev/approve (spec.approval)
	ReasonAwaitingReleaseAge  = "AwaitingReleaseAge"  // a version waits until it is spec.minReleaseAge old
	ReasonImageNotFound       = "ImageNotFound"       // spec.checkImage: the version's image is not in its registry
	ReasonUnsigned            = "Unsigned"            // spec.verify: the version's image carries no signature by the key
	ReasonFrozen              = "Frozen"              // a deny window of spec.windows holds a version
	ReasonAwaitingRolloutSlot = "AwaitingRolloutSlot" // a RolloutCalendar's maxConcurrent rollouts are in flight
	ReasonStaggered           = "Staggered"           // a version waits its part of a RolloutCalendar's jitter
	ReasonSoaking             = "Soaking"             // the version is healthy and watched through spec.soakTime
	ReasonAnalyzing           = "Analyzing"           // the version is healthy and its analysis needs more measurements
	ReasonNoPrometheus        = "NoPrometheus"        // spec.analysis, but the manager has no --prometheus-url
)

// ConditionGitWriteBack is the condition of a config with spec.gitWriteBack: True (Written) once a
// write put the status in Git, False (GitWriteBackFailed) while writing fails.
const ConditionGitWriteBack = "GitWriteBack"
