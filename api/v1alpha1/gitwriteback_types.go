package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitWriteBackSpec is a branch of a Git repository and how rollgate writes to it.
type GitWriteBackSpec struct {
	// URL of the repository over HTTP(S), e.g. https://git.example.com/acme/fleet.git, or over SSH,
	// e.g. ssh://git@git.example.com/acme/fleet.git (the scp-like git@host:path is not taken). The
	// manager reaches only the hosts its --git-allow flag allows.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/@]+/.+$') || self.matches('^ssh://([^/@:]+@)?[^/@]+/.+$')",message="url must be an http(s) URL without credentials (put those in the secret) or an ssh:// URL, of a repository"
	URL string `json:"url"`

	// Branch the commits are pushed to.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`

	// PushBranch, when set, gets the commits instead of Branch, for a pull request that your own
	// tooling opens: they are made on it once it exists (each outcome adds to it), on Branch before
	// that. Delete it once merged and the next commit starts it afresh from Branch.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	PushBranch string `json:"pushBranch,omitempty"`

	// SecretRef names a Secret in this namespace with the credentials. Over HTTP(S), for basic auth:
	// `username` and `password` (for a token, the token as password); absent: no credentials. Over
	// SSH (required): `identity`, the private key, `known_hosts`, the lines that list the host's
	// key, and for an encrypted key its `password`, as Flux keeps them. Its `allowedPaths`, the
	// word of the admin who owns the credential, lists the paths it may write for the configs of
	// this namespace (directories ending in "/", files or patterns; absent: any path).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// SigningKey signs the commits with OpenPGP: the Secret it names, in this namespace, holds the
	// armored private key as `git.asc` and, when the key is encrypted, its `passphrase` (as Flux's
	// image automation keeps them). Absent: commits are not signed.
	// +optional
	SigningKey *GitSigningKey `json:"signingKey,omitempty"`

	// Author of the commits.
	// +kubebuilder:default={}
	// +optional
	Author GitAuthor `json:"author,omitempty"`

	// MessageTemplate is the commit message, a Go text/template executed with .Outcomes: one per
	// config whose files the commit changes, with .Namespace, .Name, .Image, .Version (the version
	// that last passed), .Rolling (a GitFirst config: the version the commit rolls out), .Result
	// (Healthy, RolledBack or Withdrawn; empty before any verdict), .Tried (the version of that
	// verdict), .Reason (what its history entry adds),
	// .FailedVersions and .Line (rollgate's own line for it). Empty: rollgate's message, a subject
	// and a line per config. It may use text, fields, if, with, range over .Outcomes (not inside
	// another range) and .FailedVersions, and the functions and, or, not, len, index, eq, ne, lt,
	// le, gt, ge. A template that fails on an example stops the writes and says why in each
	// config's GitWriteBack condition; one whose work on a commit's outcomes passes a bound gives
	// that commit rollgate's message.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// RecordDir is the directory of the configs' records, one file per config at
	// <recordDir>/<namespace>/<name>.yaml: the version that last passed its health check and the
	// versions that failed. Clusters that share a repository and have configs of the same
	// namespace and name need a directory each.
	// +kubebuilder:default=".rollgate"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="recordDir must be a path inside the repository"
	// +optional
	RecordDir string `json:"recordDir,omitempty"`

	// RenovatePreset is the path of the Renovate preset rollgate keeps: one package rule per image
	// whose allowedVersions refuse the versions that failed, made from every record in RecordDir.
	// Extend it from the repository's Renovate config and Renovate stops proposing them. Empty: no
	// preset.
	// +kubebuilder:default=".rollgate/renovate.json"
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="renovatePreset must be a path inside the repository"
	// +optional
	RenovatePreset string `json:"renovatePreset,omitempty"`
}

// GitSigningKey is where the OpenPGP key that signs the commits is.
type GitSigningKey struct {
	// SecretRef names the Secret with `git.asc` and, optionally, `passphrase`.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// GitAuthor is who rollgate's commits say wrote them.
type GitAuthor struct {
	// +kubebuilder:default=rollgate
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`

	// +kubebuilder:default="rollgate@rollgate.dev"
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Email string `json:"email,omitempty"`
}

// GitWriteBack is a branch of a Git repository that rollgate writes to after each health verdict:
// the image that passed into the workload's file, each config's record, and the Renovate preset of
// the failed versions. RollingUpgradeConfigs in its namespace name it (spec.gitWriteBack.name);
// many share one, and their writes go in few commits.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gwb,categories=rollgate
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Configs",type=integer,JSONPath=`.status.configCount`
// +kubebuilder:printcolumn:name="Last Commit",type=string,JSONPath=`.status.lastCommit`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitWriteBack struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitWriteBackSpec `json:"spec"`
	Status WriteBackStatus  `json:"status,omitempty"`
}

// MaxListedConfigs is how many configs a GitWriteBack's status names.
const MaxListedConfigs = 50

// WriteBackStatus is what the configs that write through a GitWriteBack say of it, gathered in one
// place: whether their writes land, the last commit, the last error, and who they are.
type WriteBackStatus struct {
	// ObservedGeneration is the generation of the spec this status was gathered for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is True (Written) while no config's writes fail, False
	// (GitWriteBackFailed) while one's do, naming how many and the newest error; True (Unused)
	// when no config names it.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastCommit is the newest commit a config's write made, and LastWrite when Git last agreed
	// with a config's status.
	// +optional
	LastCommit string `json:"lastCommit,omitempty"`
	// +optional
	LastWrite *metav1.Time `json:"lastWrite,omitempty"`

	// LastError is the newest failure of a config's write, prefixed with the config's name; empty
	// while none fails.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	LastError string `json:"lastError,omitempty"`

	// ConfigCount is how many RollingUpgradeConfigs name it, FailingCount how many of them cannot
	// write now, and Configs the first MaxListedConfigs of their names, sorted.
	// +optional
	ConfigCount int32 `json:"configCount,omitempty"`
	// +optional
	FailingCount int32 `json:"failingCount,omitempty"`
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +optional
	Configs []string `json:"configs,omitempty"`
}

// GitWriteBackList is a list of GitWriteBacks.
//
// +kubebuilder:object:root=true
type GitWriteBackList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitWriteBack `json:"items"`
}

// GitWriteBackReference says where a config's outcomes are written.
type GitWriteBackReference struct {
	// Name of the GitWriteBack in the config's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Path of the file that says which image the workload runs, from the repository's root. A
	// kustomization (kustomization.yaml, kustomization.yml or Kustomization) gets the tag of its
	// `images:` entry for spec.image set; any other file gets the lines marked for this config set,
	// `# {"$rollgate": "<namespace>:<name>"}` for the whole image reference and
	// `# {"$rollgate": "<namespace>:<name>:tag"}` for the tag alone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="path must be a file inside the repository"
	Path string `json:"path"`

	// Mode says which of Git and the cluster gets a new image first.
	//
	// ClusterFirst (the default): rollgate renders the image into the workload and, after each
	// verdict, commits the version that passed to Path. The GitOps tool that applies Path needs an
	// ignore rule for the image field, or it puts Git's image back.
	//
	// GitFirst: a rollout is a commit of the new image to Path, which the GitOps tool applies; the
	// health check starts when the image reaches the workload, and a rollback is a commit of the last
	// healthy image. Git always says what should run, and no ignore rule is needed. A rollback that
	// cannot be written to Git is also rendered into the workload, so a broken version never stays
	// up because Git is down.
	// +kubebuilder:validation:Enum=ClusterFirst;GitFirst
	// +kubebuilder:default=ClusterFirst
	// +optional
	Mode GitWriteBackMode `json:"mode,omitempty"`

	// ApplyTimeout (GitFirst) is how long the GitOps tool has to bring a committed image to the
	// workload; the health timer starts when it arrives. A version that has not arrived by then is
	// withdrawn without a verdict: Git gets the last healthy image back, the version is not put on
	// the failed list, and the next rollout waits (ApplyTimeout after the first withdrawal, twice
	// as long after each further one in a row, at most a day).
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('30s')",message="applyTimeout must be a duration of at least 30s, e.g. 10m"
	// +optional
	ApplyTimeout *metav1.Duration `json:"applyTimeout,omitempty"`
}

// GitWriteBackMode is which of Git and the cluster gets a new image first.
type GitWriteBackMode string

const (
	// ModeClusterFirst: rendered into the workload, then each verdict committed.
	ModeClusterFirst GitWriteBackMode = "ClusterFirst"
	// ModeGitFirst: committed, and applied by the GitOps tool; rollgate watches and commits the rollback.
	ModeGitFirst GitWriteBackMode = "GitFirst"
)

// DefaultApplyTimeout is spec.gitWriteBack.applyTimeout when unset.
const DefaultApplyTimeout = 10 * time.Minute

// GitFirst reports whether the reference asks for GitFirst.
func (r *GitWriteBackReference) GitFirst() bool { return r != nil && r.Mode == ModeGitFirst }

// ApplyTimeoutOrDefault is ApplyTimeout, or its default when unset.
func (r *GitWriteBackReference) ApplyTimeoutOrDefault() time.Duration {
	if r == nil || r.ApplyTimeout == nil {
		return DefaultApplyTimeout
	}
	return r.ApplyTimeout.Duration
}

// GitWriteBackStatus is what was last written to Git for a config.
type GitWriteBackStatus struct {
	// Written is a digest of what was last written (the file, the version that passed, the failed
	// versions): while it is the digest of the status as it stands, there is nothing to write.
	// +optional
	Written string `json:"written,omitempty"`

	// Repository is the repository and branch written (URL#branch, ->pushBranch when there is one).
	// Another one, e.g. the GitWriteBack's URL changed, is written as a config that never wrote:
	// its record there is read first, and no rollout starts before.
	// +optional
	Repository string `json:"repository,omitempty"`

	// Commit is the last commit that changed something for this config.
	// +optional
	Commit string `json:"commit,omitempty"`

	// LastWrite is when Git last agreed with the status.
	// +optional
	LastWrite *metav1.Time `json:"lastWrite,omitempty"`
}
