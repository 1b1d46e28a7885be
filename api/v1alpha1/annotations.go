package v1alpha1

// The in-flight state of a rollout lives in annotations on the RollingUpgradeConfig, so that the
// controller keeps nothing in memory and a human can read and steer it with kubectl.
const (
	// TargetImageAnnotation is the image the workload should run. The controller sets it to start a
	// rollout and removes it to roll back; a human may set it by hand to force a version.
	TargetImageAnnotation = "rollgate.dev/target-image"

	// UpdatePhaseAnnotation is the step of the rollout in flight; absent or empty means idle.
	UpdatePhaseAnnotation = "rollgate.dev/update-phase"

	// UpdateStartedAnnotation is the RFC 3339 time the health timer started.
	UpdateStartedAnnotation = "rollgate.dev/update-started"

	// CheckPausedAnnotation is the RFC 3339 time a health check stopped being judged because its
	// workload could not be (missing, blocked such as a paused Deployment, or in a fight with another
	// field manager). The health timer stands still meanwhile: when the check resumes, the pause is
	// added to update-started, so no version is failed without a fair check.
	CheckPausedAnnotation = "rollgate.dev/check-paused"

	// ResetCircuitAnnotation is set by a human to a new value to close an open circuit breaker.
	ResetCircuitAnnotation = "rollgate.dev/reset-circuit"

	// ApproveAnnotation is set by a human to the version a config with spec.approval waits with,
	// to let it start. It names one version: set for another, it approves nothing.
	ApproveAnnotation = "rollgate.dev/approve"

	// RejectAnnotation is set by a person to a version that must never roll out: it goes on the
	// failed list without being tried, and a rollout of it in flight is rolled back. Each new value
	// is acted on once (status.lastReject); RejectReasonAnnotation says why, for the history.
	RejectAnnotation = "rollgate.dev/reject"

	// RejectReasonAnnotation is the reason a person gives for RejectAnnotation, recorded in the
	// history entry of the rejection (at most 256 characters are kept).
	RejectReasonAnnotation = "rollgate.dev/reject-reason"

	// RetryAnnotation is set by a person to a version on the failed list to take it off, so that
	// it may be rolled out again. Each new value is acted on once (status.lastRetry).
	RetryAnnotation = "rollgate.dev/retry"

	// ApprovedByAnnotation, RejectedByAnnotation and RetriedByAnnotation name who set approve,
	// reject and retry, as the API server knows them: written by the admission policy of
	// config/admission from the request's user, or by kubectl rollgate from the API server's
	// SelfSubjectReview. They are recorded in the history with the act.
	ApprovedByAnnotation = "rollgate.dev/approved-by"
	RejectedByAnnotation = "rollgate.dev/rejected-by"
	RetriedByAnnotation  = "rollgate.dev/retried-by"

	// LastImageAnnotation is written on the workload: the image rollgate last rendered into it.
	LastImageAnnotation = "rollgate.dev/last-image"

	// LastUpdatedByAnnotation is written on the workload: the RollingUpgradeConfig that rendered it.
	LastUpdatedByAnnotation = "rollgate.dev/last-updated-by"

	// RevertsAnnotation is written on the workload: how many times another field manager changed
	// back the image rollgate rendered, since rollgate last rendered a new image (however far apart
	// the reverts come). At MaxImageReverts rollgate stops rendering that workload; removing the
	// annotation, once the other tool leaves the field alone, resumes it.
	RevertsAnnotation = "rollgate.dev/reverts"

	// RevertedByAnnotation is written on the workload: the field manager that changed the image back.
	RevertedByAnnotation = "rollgate.dev/reverted-by"

	// RevertedAtAnnotation is written on the workload: when the image was last changed back (RFC 3339).
	RevertedAtAnnotation = "rollgate.dev/reverted-at"

	// MaxImageReverts is how often rollgate renders an image again after another field manager
	// changed it back, before it stops and reports the conflict instead of flapping the workload.
	MaxImageReverts = 3

	// VersionSourceLabel marks a ConfigMap as a version signal; unlabelled ConfigMaps are never read.
	VersionSourceLabel = "rollgate.dev/version-source"

	// Finalizer holds a deleted config until rollgate has carried out its spec.deletionPolicy and
	// given up its ownership of the workload's image.
	Finalizer = "rollgate.dev/finalizer"

	// RevisionAnnotation is written on the Events rollgate records: the version the event is
	// about. Notifications carry it as their revision.
	RevisionAnnotation = "rollgate.dev/revision"

	// FieldManager is the server-side apply field manager of every write rollgate makes.
	FieldManager = "rollgate"
)
