package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadKind is the kind of workload a RollingUpgradeConfig steers.
// +kubebuilder:validation:Enum=Deployment;StatefulSet
type WorkloadKind string

const (
	// KindDeployment is an apps/v1 Deployment.
	KindDeployment WorkloadKind = "Deployment"
	// KindStatefulSet is an apps/v1 StatefulSet.
	KindStatefulSet WorkloadKind = "StatefulSet"
)

// WorkloadReference names the workload in the config's own namespace. There is deliberately no
// namespace field: a tenant must not be able to steer another tenant's workload.
type WorkloadReference struct {
	// Kind of the workload: Deployment or StatefulSet.
	// +required
	Kind WorkloadKind `json:"kind"`

	// Name of the workload in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ApplicationVersionSource reads the version of an ApplicationVersion in the same namespace.
type ApplicationVersionSource struct {
	// Name of the ApplicationVersion.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConfigMapSource reads versions from one key of a ConfigMap in the same namespace. The ConfigMap
// must carry the label rollgate.dev/version-source: "true"; rollgate does not watch any other.
type ConfigMapSource struct {
	// Name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key whose value is one version, or a comma-separated list of versions.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// RegistrySource lists the tags of spec.image in its container registry.
type RegistrySource struct {
	// Interval between two listings of the repository.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1m')",message="interval must be a duration of at least 1m, e.g. 1h"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// ImagePolicySource reads the latest image of a Flux ImagePolicy (image.toolkit.fluxcd.io/v1) in
// the same namespace: the tag its policy chose, and its digest under spec.followTag.
type ImagePolicySource struct {
	// Name of the ImagePolicy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// VersionSource is one version signal. Exactly one of its fields is set.
// +kubebuilder:validation:XValidation:rule="(has(self.applicationVersion) ? 1 : 0) + (has(self.configMap) ? 1 : 0) + (has(self.registry) ? 1 : 0) + (has(self.imagePolicy) ? 1 : 0) == 1",message="a source sets exactly one of applicationVersion, configMap, registry or imagePolicy"
type VersionSource struct {
	// ApplicationVersion reads spec.version of an ApplicationVersion.
	// +optional
	ApplicationVersion *ApplicationVersionSource `json:"applicationVersion,omitempty"`

	// ConfigMap reads a key of a labelled ConfigMap.
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`

	// Registry lists the tags of spec.image.
	// +optional
	Registry *RegistrySource `json:"registry,omitempty"`

	// ImagePolicy reads status.latestRef of a Flux ImagePolicy, which image-reflector-controller
	// keeps: Flux's image automation chooses, rollgate rolls out with its own checks.
	// +optional
	ImagePolicy *ImagePolicySource `json:"imagePolicy,omitempty"`
}

// MaintenanceWindow says when a rollout may start: the window opens at every fire time of the cron
// schedule and stays open for the duration. Only the start of a rollout is gated; a health check in
// flight goes on after the window closes.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) && has(self.duration)",message="a maintenance window needs both schedule and duration"
type MaintenanceWindow struct {
	// Schedule is a cron expression of five fields: minute hour day-of-month month day-of-week.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *[^ ]+( +[^ ]+){4} *$')",message="schedule must be a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. \"0 3 * * *\""
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="set the time zone in timeZone, not in the schedule"
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// Duration the window stays open after each fire time.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1m')",message="duration must be a duration of at least 1m, e.g. 2h"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TimeZone is the IANA time zone the schedule is read in, e.g. Europe/Berlin.
	// +kubebuilder:default="UTC"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// WindowType says whether a calendar window lets rollouts start or stops them.
// +kubebuilder:validation:Enum=Allow;Deny
type WindowType string

const (
	// WindowAllow: rollouts may start while the window is open (with any allow window, only then).
	WindowAllow WindowType = "Allow"
	// WindowDeny: no rollout starts while the window is open, whatever allows it.
	WindowDeny WindowType = "Deny"
)

// CalendarWindow is one window of a calendar: recurring (schedule, duration, timeZone, as a
// maintenance window) or one-off (start and end), that allows or denies the start of rollouts.
// Only starts are gated: a health check in flight goes on, and a rollback is never held.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) ? (has(self.duration) && !has(self.start) && !has(self.end)) : (has(self.start) && has(self.end) && !has(self.duration))",message="a window is either recurring (schedule and duration) or one-off (start and end)"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || timestamp(self.start) < timestamp(self.end)",message="a one-off window's end must come after its start"
type CalendarWindow struct {
	// Name of the window, in messages: the window that decided is named.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Type is Allow (the default) or Deny; a deny wins over any allow.
	// +kubebuilder:default=Allow
	// +optional
	Type WindowType `json:"type,omitempty"`

	// Schedule is a cron expression of five fields: the window opens at each fire time.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *[^ ]+( +[^ ]+){4} *$')",message="schedule must be a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. \"0 3 * * *\""
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="set the time zone in timeZone, not in the schedule"
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// Duration the recurring window stays open after each fire time (elapsed time).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1m')",message="duration must be a duration of at least 1m, e.g. 2h"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TimeZone the schedule is read in (IANA name); default UTC.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// Start of a one-off window (RFC 3339), e.g. a freeze over the holidays.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// End of a one-off window (RFC 3339), excluded.
	// +optional
	End *metav1.Time `json:"end,omitempty"`
}

// DeletionPolicy is what happens to the workload when its config is deleted.
// +kubebuilder:validation:Enum=Rollback;Keep
type DeletionPolicy string

const (
	// DeletionRollback: a version in flight goes back to status.currentImage before the config goes.
	DeletionRollback DeletionPolicy = "Rollback"
	// DeletionKeep: the workload keeps the image it runs.
	DeletionKeep DeletionPolicy = "Keep"
)

// ApprovalPolicy says which versions wait for a person's approval.
type ApprovalPolicy string

const (
	// ApprovalNone: no version waits.
	ApprovalNone ApprovalPolicy = "None"
	// ApprovalRequired: every version waits.
	ApprovalRequired ApprovalPolicy = "Required"
	// ApprovalMajor: a version of a higher major than the running version waits.
	ApprovalMajor ApprovalPolicy = "Major"
)

// +kubebuilder:validation:XValidation:rule="!(has(self.pinDigest) && self.pinDigest && has(self.gitWriteBack) && has(self.gitWriteBack.mode) && self.gitWriteBack.mode == 'GitFirst')",message="pinDigest renders digests, and a GitFirst write-back commits tags: choose one"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.strategy.type) || self.strategy.type != 'InPlace' || self.targetRef.kind == 'StatefulSet'",message="strategy InPlace changes the pods of a StatefulSet: targetRef.kind must be StatefulSet"
// +kubebuilder:validation:XValidation:rule="!(has(self.strategy) && has(self.strategy.type) && self.strategy.type == 'InPlace' && has(self.gitWriteBack) && has(self.gitWriteBack.mode) && self.gitWriteBack.mode == 'GitFirst')",message="strategy InPlace does not work with a GitFirst write-back: use ClusterFirst"
// +kubebuilder:validation:XValidation:rule="!has(self.followTag) || (!has(self.tagPolicy) && !has(self.filterTags) && (!has(self.versionConstraint) || self.versionConstraint == '>=0.0.0'))",message="followTag follows the digests of one tag: it takes no tagPolicy, filterTags or versionConstraint"
// +kubebuilder:validation:XValidation:rule="!has(self.followTag) || !has(self.sources) || (size(self.sources) == 1 && self.sources.all(s, has(s.registry) || has(s.imagePolicy)))",message="followTag reads the tag's digest from one source, the registry or an ImagePolicy: two could name two digests, which have no order to choose by"
// +kubebuilder:validation:XValidation:rule="!(has(self.verify) && has(self.gitWriteBack) && has(self.gitWriteBack.mode) && self.gitWriteBack.mode == 'GitFirst')",message="verify renders what it verified by digest, and a GitFirst write-back commits tags: use ClusterFirst"
// +kubebuilder:validation:XValidation:rule="!(has(self.followTag) && has(self.gitWriteBack))",message="followTag rolls out digests, which a write-back to Git does not record: it takes no gitWriteBack"
// +kubebuilder:validation:XValidation:rule="!has(self.tagPolicy) || !has(self.tagPolicy.alphabetical) || has(self.filterTags)",message="an alphabetical tag policy needs filterTags: every tag has a text, and latest or main would read as versions"
// +kubebuilder:validation:XValidation:rule="!(has(self.container) && has(self.containers))",message="name one container in container or several in containers, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.containers) || !has(self.strategy) || !has(self.strategy.type) || self.strategy.type != 'InPlace'",message="strategy InPlace changes the image of one container in place: use container, not containers"
// RollingUpgradeConfigSpec says which workload rollgate steers, where its versions come from, which
// versions it may take, and when and how carefully it may roll them out.
type RollingUpgradeConfigSpec struct {
	// TargetRef is the Deployment or StatefulSet whose container image rollgate renders.
	// +required
	TargetRef WorkloadReference `json:"targetRef"`

	// Container is the name of the container whose image is managed. Default: the first container.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`

	// Containers names several containers of the pod template, init containers and sidecars
	// included, that run the same image (the app, its migration init container, a worker): each
	// version is rendered into all of them in one write, judged with the workload's health as one,
	// and rolled back together. Each must run an image of spec.image. Instead of container.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Containers []string `json:"containers,omitempty"`

	// Image is the repository, without tag or digest; a candidate version V becomes image:V.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-zA-Z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$')",message="image must be a repository without tag or digest, e.g. ghcr.io/acme/web"
	Image string `json:"image"`

	// VersionConstraint is a semver constraint (Masterminds syntax) a version must satisfy.
	// +kubebuilder:default=">=0.0.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	VersionConstraint string `json:"versionConstraint,omitempty"`

	// TagPolicy orders tags that are not semantic versions (builds tagged by commit and time, by
	// number or by date), as Flux's ImagePolicy does. Without it tags are semver versions within
	// versionConstraint, which must keep its default beside a tag policy. The failed list, the
	// circuit breaker, windows and every gate work the same for either.
	// +optional
	TagPolicy *TagPolicy `json:"tagPolicy,omitempty"`

	// FollowTag follows one moving tag, such as stable or latest, instead of ordering tags: each
	// digest the registry resolves it to is a version, named tag@digest (stable@sha256:…), rolled
	// out pinned by that digest and checked and rolled back like any other; the failed list holds
	// the digests that failed, so a tag moved back to one of them holds. Its one source is the
	// registry, which is asked for the tag's digest at each interval instead of listing tags, or
	// an ImagePolicy that reflects the tag's digest (digestReflectionPolicy Always). The workload
	// must run a build pinned by digest: on the bare tag it holds (Unversioned), since a rollback
	// to the bare tag could pull the failed build again. spec.minReleaseAge counts from the tag's
	// move to a build. Not with spec.gitWriteBack.
	// At most 56 characters: with its digest, a version is at most 128.
	// +kubebuilder:validation:MaxLength=56
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`
	// +optional
	FollowTag string `json:"followTag,omitempty"`

	// FilterTags keeps only the tags that match its pattern, and orders them by what it extracts,
	// under the tag policy or semver.
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// Sources are the version signals; the candidates of all of them are merged. With no source,
	// only a target-image annotation set by hand moves the workload.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Sources []VersionSource `json:"sources,omitempty"`

	// MaintenanceWindow gates the start of a rollout. Absent: always open.
	// +optional
	MaintenanceWindow *MaintenanceWindow `json:"maintenanceWindow,omitempty"`

	// Windows are the config's calendar, beside spec.maintenanceWindow (an allow window): a
	// rollout starts while an allow window is open (any time, with none) and no deny window is.
	// Ready names the window that decides, and status.nextWindow when a held version starts.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Windows []CalendarWindow `json:"windows,omitempty"`

	// CheckFitsWindow starts a version only when the calendar (spec.maintenanceWindow,
	// spec.windows, RolloutCalendars) stays open for its health timeout and soak from the start:
	// the whole check then runs inside the window that let it start. Off (the default): a check
	// in flight goes on after the window closes.
	// +optional
	CheckFitsWindow bool `json:"checkFitsWindow,omitempty"`

	// HealthTimeout is how long a new version has to become healthy before it is rolled back.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('30s')",message="healthTimeout must be a duration of at least 30s, e.g. 10m"
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`

	// SoakTime keeps watching a version that became healthy for this long before it passes: the
	// workload must be healthy at the end, and spec.analysis goes on measuring meanwhile. A
	// workload that turns unhealthy during the soak is judged as during the health check: after
	// the health timeout, a pod of the version that is not Ready (a health timeout after a node
	// started it) rolls the version back. Default 0: a version passes when it is first healthy.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="soakTime must be a duration, e.g. 30m"
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// Analysis checks the version's metrics in the cluster admin's Prometheus during the health
	// check and the soak; a failed check rolls the version back, an inconclusive one (Prometheus
	// unreachable, no data) holds the verdict until it can measure again.
	// +optional
	Analysis *Analysis `json:"analysis,omitempty"`

	// MaxRollbacks is the number of consecutive rollbacks after which the circuit breaker opens and
	// no new version is applied until a human resets it.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRollbacks int32 `json:"maxRollbacks,omitempty"`

	// Suspend stops all automatic rollouts of this config; a rollout in flight is still watched.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Approval says which versions wait for a person before they start. None (the default): no
	// version waits. Required: every version. Major: a version of a higher major than the one
	// running. A waiting version is Pending (Ready reason AwaitingApproval) until a person sets the
	// annotation rollgate.dev/approve to it (kubectl annotate ruc web rollgate.dev/approve=1.4.0);
	// an approval names one version, so one left for another version does nothing. The window still
	// decides when an approved version starts. A rollback never waits, nor does a target-image set
	// by hand (a person set it).
	// +kubebuilder:validation:Enum=None;Required;Major
	// +kubebuilder:default=None
	// +optional
	Approval ApprovalPolicy `json:"approval,omitempty"`

	// MinReleaseAge makes a version eligible only this long after its release: fresh releases are
	// the riskiest. The release time is the earliest any source knows (an ApplicationVersion's
	// spec.releasedAt, which `rollgate renovate import` sets from Renovate's releaseTimestamp),
	// else, for a config that reads its registry anyway (a registry source, spec.checkImage or
	// spec.pinDigest), the build time in the image's config, else when rollgate first saw the
	// version (status.seenVersions). While the newest version is
	// too young, the newest one old enough is rolled out; when none is, the newest waits Pending
	// (Ready reason AwaitingReleaseAge) until the instant it becomes eligible. Unset: no wait.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="minReleaseAge must be a duration, e.g. 72h"
	// +optional
	MinReleaseAge *metav1.Duration `json:"minReleaseAge,omitempty"`

	// CheckImage looks the version's image up in its registry before a rollout starts, with the
	// credentials the workload's pods pull with: an image the registry does not have (a tag
	// announced before its push finished, a typo in a source) waits Pending (Ready reason
	// ImageNotFound, one Warning event) instead of being rolled out, failing to pull and burning
	// the version. A target set by hand is not looked up.
	// +optional
	CheckImage bool `json:"checkImage,omitempty"`

	// PinDigest renders the version's image by digest, repo:tag@sha256:…, as the registry resolves
	// the tag when the rollout starts (implies checkImage): the workload runs exactly the bits that
	// were checked, even if the tag moves, and status.versionHistory records the digest. Not with
	// spec.gitWriteBack.mode GitFirst, which commits tags.
	// +optional
	PinDigest bool `json:"pinDigest,omitempty"`

	// Verify checks each version's image before it rolls out: with cosign, a signature by the
	// team's key or, keyless, by its identity (implies pinDigest, so that the workload runs the
	// bits that were verified). An
	// image without such a signature waits Pending (Ready reason Unsigned, one Warning event), is
	// never rendered, and is checked again each minute. Not with a GitFirst write-back.
	// +optional
	Verify *Verify `json:"verify,omitempty"`

	// Strategy says how the new image reaches the pods: RollingUpdate (the default), or InPlace
	// for a StatefulSet with updateStrategy OnDelete and the readiness gate
	// rollgate.dev/in-place-ready in its pod template, whose pods rollgate then changes in place,
	// one by one, each drained from its Service first; each pod has its own readiness timeout.
	// Not with a GitFirst write-back.
	// +optional
	Strategy *UpgradeStrategy `json:"strategy,omitempty"`

	// DeletionPolicy says what happens to the workload when the config is deleted. Rollback (the
	// default): a version in flight goes back to status.currentImage before the config goes. Keep:
	// the workload keeps whatever it runs. Either way rollgate then gives up its ownership of the
	// image field, so the GitOps tool that manages the workload owns it again.
	// +kubebuilder:default=Rollback
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// AllowZeroReplicas lets a workload scaled to 0 replicas pass its health check although no pod
	// of the new version ever ran. Off by default: a health check that saw no Ready pod of the new
	// version proves nothing, so a workload at 0 replicas holds its rollouts instead.
	// +optional
	AllowZeroReplicas bool `json:"allowZeroReplicas,omitempty"`

	// GitWriteBack writes the outcome of each health verdict into Git: the version that passed
	// into the workload's file, and this config's record (that version and the failed ones), from
	// which the Renovate preset of failed versions is made. No rollout starts before the config's
	// record in Git was read once (status.gitWriteBack set: the versions that failed in an earlier
	// life of the config count, and the version that last passed). In the ClusterFirst mode rollouts
	// never wait for Git after that, and the GitOps tool keeps an ignore rule for the image field; in
	// the GitFirst mode a rollout is a commit that the GitOps tool applies (see mode).
	// +optional
	GitWriteBack *GitWriteBackReference `json:"gitWriteBack,omitempty"`
}

// Defaults of the optional durations; the API server fills them in, these serve objects built in Go.
const (
	DefaultHealthTimeout    = 10 * time.Minute
	DefaultRegistryInterval = time.Hour
)

// DurationOrZero is d, 0 when unset.
func DurationOrZero(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// ContainerNames are the containers the spec names: spec.containers, or spec.container; none means
// the first container of the pod template.
func (s *RollingUpgradeConfigSpec) ContainerNames() []string {
	if len(s.Containers) > 0 {
		return s.Containers
	}
	if s.Container != "" {
		return []string{s.Container}
	}
	return nil
}

// MinReleaseAgeOrZero is spec.minReleaseAge, 0 when unset.
func (s *RollingUpgradeConfigSpec) MinReleaseAgeOrZero() time.Duration {
	return DurationOrZero(s.MinReleaseAge)
}

// SoakTimeOrZero is spec.soakTime, 0 when unset.
func (s *RollingUpgradeConfigSpec) SoakTimeOrZero() time.Duration {
	return DurationOrZero(s.SoakTime)
}

// HealthTimeoutOrDefault is spec.healthTimeout, or its default when unset.
func (s *RollingUpgradeConfigSpec) HealthTimeoutOrDefault() time.Duration {
	if s.HealthTimeout == nil {
		return DefaultHealthTimeout
	}
	return s.HealthTimeout.Duration
}

// Phase is the state of a RollingUpgradeConfig's rollout.
// +kubebuilder:validation:Enum=Idle;Pending;InProgress;RollingBack;Completed;Failed;Suspended
type Phase string

const (
	// PhaseIdle: no rollout yet and nothing to do.
	PhaseIdle Phase = "Idle"
	// PhasePending: a version is held until the maintenance window opens.
	PhasePending Phase = "Pending"
	// PhaseInProgress: a version was applied and its health check is running.
	PhaseInProgress Phase = "InProgress"
	// PhaseRollingBack: the rollback is watched until the previous version is healthy again.
	PhaseRollingBack Phase = "RollingBack"
	// PhaseCompleted: the last rollout succeeded.
	PhaseCompleted Phase = "Completed"
	// PhaseFailed: the circuit breaker is open.
	PhaseFailed Phase = "Failed"
	// PhaseSuspended: spec.suspend is set.
	PhaseSuspended Phase = "Suspended"
)

// RolloutResult is the outcome of one rollout in the version history.
// +kubebuilder:validation:Enum=Healthy;RolledBack;Abandoned;Withdrawn;Rejected;Retried
type RolloutResult string

const (
	// ResultHealthy: the version passed its health check.
	ResultHealthy RolloutResult = "Healthy"
	// ResultRolledBack: the version failed its health check and was rolled back.
	ResultRolledBack RolloutResult = "RolledBack"
	// ResultAbandoned: a person ended the health check before its verdict (changed the config's
	// target workload or container); the version was not judged and is not on the failed list.
	ResultAbandoned RolloutResult = "Abandoned"
	// ResultWithdrawn: the version was committed to Git (spec.gitWriteBack.mode GitFirst) but did not
	// reach the workload within the apply timeout, so the commit was undone; it was not judged and
	// is not on the failed list.
	ResultWithdrawn RolloutResult = "Withdrawn"
	// ResultRejected: a person rejected the version (rollgate.dev/reject); it went on the failed
	// list without a rollout, or its rollout in flight was rolled back. AppliedAt is when.
	ResultRejected RolloutResult = "Rejected"
	// ResultRetried: a person took the version off the failed list (rollgate.dev/retry), so that
	// it may roll out again. AppliedAt is when.
	ResultRetried RolloutResult = "Retried"
)

// MaxFailedVersions is the number of failedVersions entries kept; see FailedVersionsDropped.
const MaxFailedVersions = 100

// MaxHistory is the number of versionHistory entries kept; older ones are dropped first.
const MaxHistory = 50

// VersionHistoryEntry records one finished rollout.
type VersionHistoryEntry struct {
	// Version is the tag that was rolled out (tag@digest under spec.followTag).
	Version string `json:"version"`
	// Image is the full image reference that was rolled out.
	Image string `json:"image"`
	// AppliedAt is when the rollout started.
	AppliedAt metav1.Time `json:"appliedAt"`
	// Status is the outcome: Healthy, RolledBack, Abandoned or Withdrawn; or a person's act on
	// the version, Rejected or Retried.
	Status RolloutResult `json:"status"`
	// RequestedBy is who approved the rollout (rollgate.dev/approved-by), or asked for the
	// rejection or retry (rejected-by, retried-by), as the API server named them.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// Reason says what the status alone does not: why a version was rolled back (a timeout, a
	// crash, a failed analysis), why a person rejected it, or that a version set by hand replaced a
	// newer one, which then went on the failed list.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MaxSeenVersions is the number of seenVersions entries kept; the oldest versions go first.
const MaxSeenVersions = 20

// SeenVersion is when rollgate first saw a candidate version.
type SeenVersion struct {
	// Version as its source wrote it.
	Version string `json:"version"`
	// FirstSeen is when a source first announced it to rollgate.
	FirstSeen metav1.Time `json:"firstSeen"`
	// ImageCreated is the build time ("created") in the config of the version's image, read once
	// from its registry for a version no source dates, when the config reads its registry anyway;
	// it counts as the release time. Absent when it could not be read, or was no time a release
	// can have (none, 1970 from a reproducible build, or later than now).
	// +optional
	ImageCreated *metav1.Time `json:"imageCreated,omitempty"`
	// ImageRead: the registry was asked for ImageCreated; it is not asked again.
	// +optional
	ImageRead bool `json:"imageRead,omitempty"`
}

// RecordedTarget names the workload and containers a status was recorded for.
type RecordedTarget struct {
	// Kind of the workload.
	Kind WorkloadKind `json:"kind"`
	// Name of the workload.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Container as spec.container named it; empty means the first container.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`
	// Containers as spec.containers named them, when it names more than one, in sorted order
	// (one is recorded as container).
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Containers []string `json:"containers,omitempty"`
}

// RollingUpgradeConfigStatus is what rollgate observed and decided.
type RollingUpgradeConfigStatus struct {
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling and Stalled, following kstatus.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase of the rollout.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// CurrentVersion is the last version that passed its health check.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// CurrentImage is the image of CurrentVersion; a rollback returns to it.
	// +optional
	CurrentImage string `json:"currentImage,omitempty"`

	// RecordedTarget is the workload and containers that CurrentImage and the rollout in flight
	// belong to. An image recorded for one workload is never rendered into another: when
	// spec.targetRef, spec.container or spec.containers names others, a rollout in flight is
	// abandoned, neither workload is touched, and the new workload's image is recorded afresh.
	// +optional
	RecordedTarget *RecordedTarget `json:"recordedTarget,omitempty"`

	// TargetVersion is the version being rolled out (InProgress) or held (Pending).
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`

	// AvailableVersion is the best eligible candidate right now.
	// +optional
	AvailableVersion string `json:"availableVersion,omitempty"`

	// NextWindow is when a held version will be applied.
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`

	// Hold is the gate that holds the version: before its start (phase Pending, the version in
	// targetVersion) or before its verdict (phase InProgress, a healthy version that soaks or
	// waits for its analysis). Absent when no gate holds it.
	// +optional
	Hold *Hold `json:"hold,omitempty"`

	// LastCheck is when the sources last gave a new answer: the first one, or another best
	// eligible version (availableVersion). Reads that find the same answer leave the status as it
	// is, so that a settled config costs no writes.
	// +optional
	LastCheck *metav1.Time `json:"lastCheck,omitempty"`

	// LastUpdate is when a version was last applied.
	// +optional
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`

	// RollbackCount is the number of consecutive rollbacks; a healthy rollout resets it.
	// +optional
	RollbackCount int32 `json:"rollbackCount,omitempty"`

	// CircuitOpen is true when RollbackCount reached spec.maxRollbacks; no version is applied until
	// a human sets a new value of the rollgate.dev/reset-circuit annotation.
	// +optional
	CircuitOpen bool `json:"circuitOpen,omitempty"`

	// FailedVersions are the tags (tag@digest under spec.followTag) that were rolled back, as
	// their exact original strings; they are never tried again.
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +optional
	FailedVersions []string `json:"failedVersions,omitempty"`

	// FailedVersionsDropped counts the versions dropped from FailedVersions to keep it within
	// MaxFailedVersions; versions below CurrentVersion, which are never candidates anyway, go first.
	// +optional
	FailedVersionsDropped int32 `json:"failedVersionsDropped,omitempty"`

	// LastCircuitReset is the last value of the rollgate.dev/reset-circuit annotation that was acted
	// on; a different value resets the circuit breaker once.
	// +optional
	LastCircuitReset string `json:"lastCircuitReset,omitempty"`

	// LastReject is the last value of the rollgate.dev/reject annotation that was acted on; a
	// different value rejects that version once.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastReject string `json:"lastReject,omitempty"`

	// LastRetry is the last value of the rollgate.dev/retry annotation that was acted on; a
	// different value takes that version off the failed list once.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastRetry string `json:"lastRetry,omitempty"`

	// GitWriteBack is what was last written to Git (spec.gitWriteBack); the GitWriteBack
	// condition says whether Git agrees with this status.
	// +optional
	GitWriteBack *GitWriteBackStatus `json:"gitWriteBack,omitempty"`

	// SeenVersions are when rollgate first saw the candidates newer than the current version,
	// the newest 20, kept only with spec.minReleaseAge: the release time of a version no source
	// dates.
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=version
	// +optional
	SeenVersions []SeenVersion `json:"seenVersions,omitempty"`

	// HealthCheck is the state of the last health check beyond the annotations: the start of its
	// soak and the measurements of its analysis, kept until the next check starts. Only configs
	// with spec.soakTime or spec.analysis have it.
	// +optional
	HealthCheck *HealthCheckStatus `json:"healthCheck,omitempty"`

	// InPlace is the progress of the last in-place upgrade or its rollback (spec.strategy InPlace),
	// pod by pod.
	// +optional
	InPlace *InPlaceStatus `json:"inPlace,omitempty"`

	// VersionHistory lists finished rollouts, newest last, at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	VersionHistory []VersionHistoryEntry `json:"versionHistory,omitempty"`
}

// RollingUpgradeConfig rolls a Deployment or StatefulSet forward to new image versions announced by
// version signals, inside a maintenance window, with a health check, rollback and a circuit breaker.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ruc,categories=rollgate
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Target Version",type=string,JSONPath=`.status.targetVersion`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.availableVersion`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Circuit",type=boolean,JSONPath=`.status.circuitOpen`
// +kubebuilder:printcolumn:name="Rollbacks",type=integer,JSONPath=`.status.rollbackCount`,priority=1
// +kubebuilder:printcolumn:name="Next Window",type=string,JSONPath=`.status.nextWindow`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RollingUpgradeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RollingUpgradeConfigSpec   `json:"spec"`
	Status RollingUpgradeConfigStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (fluxcd meta.ObjectWithConditions).
func (in *RollingUpgradeConfig) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions (fluxcd meta.ObjectWithConditionsSetter).
func (in *RollingUpgradeConfig) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// RollingUpgradeConfigList is a list of RollingUpgradeConfigs.
//
// +kubebuilder:object:root=true
type RollingUpgradeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RollingUpgradeConfig `json:"items"`
}
