// Package gitwriteback writes what configs decide back to Git: it reads a config's GitWriteBack
// and credentials, lets internal/writeback say what its repository should hold, and queues the
// commits that internal/gitwrite pushes.
package gitwriteback

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ProtonMail/go-crypto/openpgp"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
	"github.com/rollgate/rollgate/internal/writeback"
)

// GitWriteBackReconciler writes the outcomes of configs with spec.gitWriteBack into Git, through the
// Queue that batches them per repository. It compares what the status says with what was last
// written (status.gitWriteBack.written), asks the queue for the difference, and records the
// queue's answer: the GitWriteBack condition, and a Warning event when a write starts failing.
// It reads the rollout's status and never changes it.
type GitWriteBackReconciler struct {
	Client    client.Client
	APIReader client.Reader // uncached: the credentials' Secret
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Queue     *writeback.Queue
	// CredentialsTTL: a GitWriteBack's Secrets are read at most this often, however many of its
	// configs ask (a Git outage wakes them all at each retry); a mended Secret is seen after it.
	// Zero reads them at each ask.
	CredentialsTTL time.Duration

	mu    sync.Mutex
	creds map[types.NamespacedName]readCredentials // by GitWriteBack
}

// readCredentials are a GitWriteBack's credentials as read at a time, for the resourceVersion of
// the GitWriteBack they were read for.
type readCredentials struct {
	version string
	at      time.Time
	remote  gitwrite.Remote
	author  gitwrite.Commit
	secrets []string
	// allowed are the paths the credential may write (its Secret's allowedPaths); nil: any.
	allowed writeback.AllowedPaths
	err     error
}

const (
	// retryFileErrors: a write refused for one config's files (no line marked, a file that is not
	// a kustomization) needs a person; it is tried again this long after.
	retryFileErrors = 5 * time.Minute
	// awaitWrite: a config waiting for its write looks again this long after, should the queue's
	// wake-up be lost.
	awaitWrite = time.Minute
)

func (r *GitWriteBackReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &ruc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Queue.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ref := ruc.Spec.GitWriteBack
	if ref == nil || ruc.DeletionTimestamp != nil {
		r.Queue.Forget(req.NamespacedName)
		if ruc.DeletionTimestamp != nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.forget(ctx, &ruc)
	}
	if ruc.Status.ObservedGeneration == 0 {
		return ctrl.Result{}, nil // the engine has not looked at the config yet: nothing to tell Git
	}
	var gwb v1alpha1.GitWriteBack
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ruc.Namespace, Name: ref.Name}, &gwb); err != nil {
		if apierrors.IsNotFound(err) {
			// The GitWriteBack's creation wakes the config.
			return ctrl.Result{}, r.record(ctx, &ruc, nil, nil, fmt.Errorf("GitWriteBack %q not found", ref.Name))
		}
		return ctrl.Result{}, err
	}
	want := writeback.Desire(&ruc, &gwb)
	if st := ruc.Status.GitWriteBack; st != nil && st.Repository != want.Repository {
		// Another repository or branch: what the status says was written is not there, and the
		// record there may list versions that failed. Start over as a config that never wrote
		// (the engine holds its rollouts meanwhile); the status change brings it back here.
		return ctrl.Result{}, r.forgetWritten(ctx, &ruc)
	}
	if st := ruc.Status.GitWriteBack; st != nil && st.Written == want.Digest &&
		apimeta.IsStatusConditionTrue(ruc.Status.Conditions, v1alpha1.ConditionGitWriteBack) {
		return ctrl.Result{}, nil
	}
	if res, ok := r.Queue.Result(req.NamespacedName); ok && res.Digest == want.Digest {
		if err := r.record(ctx, &ruc, &gwb, &res, res.Err); err != nil || res.Err == nil {
			return ctrl.Result{}, err
		}
		// The queue tries a failed repository again after its backoff, with the credentials
		// submitted last (read afresh below, in case a person mended them); a config's files
		// are tried again later.
		if wait := res.At.Add(retryFileErrors).Sub(r.Clock.Now()); !res.Retrying && wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	return r.submit(ctx, &ruc, &gwb, want)
}

// submit asks the queue to write what the config wants into the GitWriteBack's repository, once
// its message template, credentials and paths allow it; what stands in the way is recorded on
// the config.
func (r *GitWriteBackReconciler) submit(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, gwb *v1alpha1.GitWriteBack, want writeback.Desired) (ctrl.Result, error) {
	tmpl, err := writeback.ParseMessageTemplate(gwb.Spec.MessageTemplate)
	if err != nil { // the GitWriteBack's next change wakes the config
		return ctrl.Result{}, r.record(ctx, ruc, nil, nil, fmt.Errorf("spec.messageTemplate of GitWriteBack %q: %w", gwb.Name, err))
	}
	creds := r.credentials(ctx, gwb)
	if creds.err != nil {
		return ctrl.Result{RequeueAfter: retryFileErrors}, r.record(ctx, ruc, nil, nil, creds.err)
	}
	if p := creds.allowed.Refused(want); p != "" {
		r.Queue.Forget(client.ObjectKeyFromObject(ruc)) // a request made before the paths were narrowed is not written either
		return ctrl.Result{RequeueAfter: retryFileErrors}, r.record(ctx, ruc, nil, nil, writeback.RefusedError(p, gwb.Spec.SecretRef.Name, creds.allowed))
	}
	r.Queue.Submit(writeback.Request{
		Config: client.ObjectKeyFromObject(ruc), Desired: want,
		Repository: types.NamespacedName{Namespace: gwb.Namespace, Name: gwb.Name},
		Remote:     creds.remote, Author: creds.author,
		Outcome: writeback.OutcomeOf(ruc), Template: tmpl, Secrets: creds.secrets,
	})
	return ctrl.Result{RequeueAfter: awaitWrite}, nil
}

// credentials are the GitWriteBack's branch and author with what its Secrets hold, their values,
// to keep out of every message, and the paths the credential may write: read at most once per
// CredentialsTTL and version of the GitWriteBack, unless reading them failed (a missing Secret is
// looked for at each ask).
func (r *GitWriteBackReconciler) credentials(ctx context.Context, gwb *v1alpha1.GitWriteBack) readCredentials {
	key, now := types.NamespacedName{Namespace: gwb.Namespace, Name: gwb.Name}, r.Clock.Now()
	r.mu.Lock()
	c, ok := r.creds[key]
	r.mu.Unlock()
	if !ok || c.err != nil || c.version != gwb.ResourceVersion || now.Sub(c.at) >= r.CredentialsTTL {
		c = r.readCredentials(ctx, gwb)
		c.version, c.at = gwb.ResourceVersion, now
		r.mu.Lock()
		if r.creds == nil {
			r.creds = map[types.NamespacedName]readCredentials{}
		}
		r.creds[key] = c
		r.mu.Unlock()
	}
	return c
}

// readCredentials reads what credentials says.
func (r *GitWriteBackReconciler) readCredentials(ctx context.Context, gwb *v1alpha1.GitWriteBack) readCredentials {
	c := readCredentials{author: gitwrite.Commit{Name: gwb.Spec.Author.Name, Email: gwb.Spec.Author.Email}}
	c.remote, c.allowed, c.secrets, c.err = r.remote(ctx, gwb)
	if c.err != nil {
		return c
	}
	var signing []string
	c.author.SignKey, signing, c.err = r.signingKey(ctx, gwb)
	c.secrets = append(c.secrets, signing...)
	return c
}

// remote is the GitWriteBack's branch with the credentials of its Secret, the paths they may write
// (`allowedPaths`, the admin's word; none: any), and the Secret's values, to keep out of every
// message. Over HTTP(S) the Secret holds `username` and `password` (a token); over SSH `identity`
// (the private key), `known_hosts` and, for an encrypted key, `password`.
func (r *GitWriteBackReconciler) remote(ctx context.Context, gwb *v1alpha1.GitWriteBack) (gitwrite.Remote, writeback.AllowedPaths, []string, error) {
	remote := gitwrite.Remote{URL: gwb.Spec.URL, Branch: gwb.Spec.Branch, PushBranch: gwb.Spec.PushBranch}
	u, err := url.Parse(gwb.Spec.URL)
	if err != nil {
		return remote, nil, nil, fmt.Errorf("spec.url of GitWriteBack %q: %w", gwb.Name, err)
	}
	ssh := u.Scheme == "ssh"
	if gwb.Spec.SecretRef == nil {
		if ssh {
			return remote, nil, nil, fmt.Errorf("GitWriteBack %q reaches its repository over SSH and names no Secret with the key and known_hosts", gwb.Name)
		}
		return remote, nil, nil, nil
	}
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: gwb.Namespace, Name: gwb.Spec.SecretRef.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return remote, nil, nil, fmt.Errorf("the credentials' Secret %q of GitWriteBack %q is not found", gwb.Spec.SecretRef.Name, gwb.Name)
		}
		return remote, nil, nil, err
	}
	paths, given := s.Data["allowedPaths"]
	allowed := writeback.ParseAllowedPaths(string(paths), given)
	password, values := string(s.Data["password"]), secretValues(&s)
	if ssh {
		user := u.User.Username()
		if user == "" {
			user = "git"
		}
		if remote.Auth, err = gitwrite.SSHAuth(user, s.Data["identity"], s.Data["password"], s.Data["known_hosts"]); err != nil {
			return remote, allowed, values, fmt.Errorf("the SSH credentials in Secret %q (identity, known_hosts) of GitWriteBack %q: %w", s.Name, gwb.Name, err)
		}
		return remote, allowed, values, nil
	}
	user := string(s.Data["username"])
	if password == "" {
		return remote, allowed, nil, fmt.Errorf("the Secret %q of GitWriteBack %q has no password", s.Name, gwb.Name)
	}
	if user == "" {
		user = "git" // a token alone: most hosts take any user name with it
	}
	remote.Auth = &githttp.BasicAuth{Username: user, Password: password}
	return remote, allowed, values, nil
}

// signingKey is the GitWriteBack's OpenPGP key, decrypted, and its Secret's values; nil when commits
// are not signed.
func (r *GitWriteBackReconciler) signingKey(ctx context.Context, gwb *v1alpha1.GitWriteBack) (*openpgp.Entity, []string, error) {
	if gwb.Spec.SigningKey == nil {
		return nil, nil, nil
	}
	name := gwb.Spec.SigningKey.SecretRef.Name
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: gwb.Namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("the signing key's Secret %q of GitWriteBack %q is not found", name, gwb.Name)
		}
		return nil, nil, err
	}
	key, err := gitwrite.ReadSigningKey(s.Data["git.asc"], s.Data["passphrase"])
	if err != nil {
		return nil, nil, fmt.Errorf("the signing key in Secret %q (git.asc) of GitWriteBack %q: %w", name, gwb.Name, err)
	}
	return key, secretValues(&s), nil
}

// secretValues are the values of a Secret, each kept out of every message.
func secretValues(s *corev1.Secret) []string {
	values := make([]string, 0, len(s.Data))
	for _, v := range s.Data {
		values = append(values, string(v))
	}
	return values
}

// record writes the queue's answer on the config: what was written, the failed versions adopted from
// an earlier life of the config, and the condition. A write that starts failing emits one Warning
// event; its message never holds the credentials.
func (r *GitWriteBackReconciler) record(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, gwb *v1alpha1.GitWriteBack,
	res *writeback.Result, failure error) error {
	orig := ruc.DeepCopy()
	cond := metav1.Condition{Type: v1alpha1.ConditionGitWriteBack, ObservedGeneration: ruc.Generation}
	if failure != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.EventGitWriteBackFailed
		cond.Message = "writing to Git failed: " + failure.Error()
	} else {
		st := ruc.Status.GitWriteBack
		if st == nil {
			st = &v1alpha1.GitWriteBackStatus{}
		}
		st.LastWrite = &metav1.Time{Time: res.At}
		if res.Commit != "" {
			st.Commit = res.Commit
		}
		ruc.Status.GitWriteBack = st
		// Git now says the status with the adopted failed versions: that is what was written.
		var order bookkeeping.Order // semver, while the config's own rules cannot be read
		if p, err := rollout.PolicyOf(ruc.Spec); err == nil {
			order = p.Compare
		}
		bookkeeping.AdoptFailed(&ruc.Status, res.Adopted.Failed, order)
		written := writeback.Desire(ruc, gwb)
		st.Written, st.Repository = written.Digest, written.Repository
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonWritten
		cond.Message = "the status as it was is written to Git"
		if st.Commit != "" {
			cond.Message += " (last commit " + st.Commit + ")"
		}
	}
	cond.Message = rollout.Bounded(cond.Message)
	wasFailing := apimeta.IsStatusConditionFalse(orig.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	apimeta.SetStatusCondition(&ruc.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(orig.Status, ruc.Status) {
		return nil
	}
	if err := r.patchStatus(ctx, orig, ruc); err != nil {
		return err
	}
	if failure != nil && !wasFailing {
		r.Recorder.Eventf(ruc, nil, corev1.EventTypeWarning, v1alpha1.EventGitWriteBackFailed, "WriteBack", "%s", cond.Message)
	}
	return nil
}

// forgetWritten takes off the status what was written, keeping the condition.
func (r *GitWriteBackReconciler) forgetWritten(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) error {
	orig := ruc.DeepCopy()
	ruc.Status.GitWriteBack = nil
	return r.patchStatus(ctx, orig, ruc)
}

// patchStatus writes ruc's status as changed from orig, failing if another wrote it in between.
func (r *GitWriteBackReconciler) patchStatus(ctx context.Context, orig, ruc *v1alpha1.RollingUpgradeConfig) error {
	return r.Client.Status().Patch(ctx, ruc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(v1alpha1.FieldManager))
}

// forget takes the write-back's condition and status off a config that no longer writes back.
func (r *GitWriteBackReconciler) forget(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) error {
	if ruc.Status.GitWriteBack == nil && apimeta.FindStatusCondition(ruc.Status.Conditions, v1alpha1.ConditionGitWriteBack) == nil {
		return nil
	}
	orig := ruc.DeepCopy()
	ruc.Status.GitWriteBack = nil
	apimeta.RemoveStatusCondition(&ruc.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	return r.patchStatus(ctx, orig, ruc)
}

// SetupWithManager watches the configs that write back (status changes included: the outcomes are
// there) and the GitWriteBacks they name, and runs the queue, whose answers wake the configs.
func (r *GitWriteBackReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	woken := make(chan event.TypedGenericEvent[*v1alpha1.RollingUpgradeConfig], 1024)
	r.Queue.Wake = func(config types.NamespacedName) {
		select {
		case woken <- event.TypedGenericEvent[*v1alpha1.RollingUpgradeConfig]{Object: &v1alpha1.RollingUpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: config.Namespace, Name: config.Name}}}:
		default: // full: the config looks again after awaitWrite
		}
	}
	if err := mgr.Add(r.Queue); err != nil {
		return err
	}
	writesBack := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.(*v1alpha1.RollingUpgradeConfig).Spec.GitWriteBack != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitwriteback").
		For(&v1alpha1.RollingUpgradeConfig{}, builder.WithPredicates(predicate.Or[client.Object](writesBack, kube.RemovedWriteBack))).
		// Its spec, not its status: the status is written from the configs' writes, and each
		// status write would wake every config of the GitWriteBack again.
		Watches(&v1alpha1.GitWriteBack{}, kube.ByName(mgr.GetClient(), kube.IndexGitWriteBack),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(woken, &handler.TypedEnqueueRequestForObject[*v1alpha1.RollingUpgradeConfig]{})).
		Complete(r)
}
