package gitwriteback

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
	"github.com/rollgate/rollgate/internal/writeback"
)

// writeBackFixture is a config that writes back to a repository of the real git http-backend,
// with its GitWriteBack, the credentials' Secret, a fake API server and a running queue.
type writeBackFixture struct {
	t      *testing.T
	ctx    context.Context
	git    *gittest.Server
	bare   string
	c      client.Client
	rec    *events.FakeRecorder
	r      *GitWriteBackReconciler
	woken  chan types.NamespacedName
	key    types.NamespacedName
	secret *corev1.Secret
}

func newWriteBackFixture(t *testing.T, files map[string]string, status v1alpha1.RollingUpgradeConfigStatus) *writeBackFixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &writeBackFixture{t: t, ctx: ctx, git: gittest.New(t), woken: make(chan types.NamespacedName, 10),
		key: types.NamespacedName{Namespace: "shop", Name: "web"}, rec: events.NewFakeRecorder(10)}
	url := f.git.Repo(t, "fleet", files)
	f.bare = f.git.Bare("fleet")
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Image: "ghcr.io/acme/web", GitWriteBack: &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "prod/kustomization.yaml"}},
		Status: status}
	gwb := &v1alpha1.GitWriteBack{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "fleet"},
		Spec: v1alpha1.GitWriteBackSpec{URL: url, Branch: "main", SecretRef: &meta.LocalObjectReference{Name: "git"},
			Author: v1alpha1.GitAuthor{Name: "rollgate", Email: "rollgate@rollgate.dev"}, RecordDir: ".rollgate", RenovatePreset: ".rollgate/renovate.json"}}
	f.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "git"},
		Data: map[string][]byte{"username": []byte(f.git.User), "password": []byte(f.git.Password)}}
	f.c = fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(ruc, gwb, f.secret).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}).Build()
	q := &writeback.Queue{Write: gitwrite.Write, Clock: clock.RealClock{}, Wake: func(n types.NamespacedName) { f.woken <- n }}
	go func() { _ = q.Start(ctx) }()
	f.r = &GitWriteBackReconciler{Client: f.c, APIReader: f.c, Recorder: f.rec, Clock: clock.RealClock{}, Queue: q}
	return f
}

func (f *writeBackFixture) reconcile() ctrl.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: f.key})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// reconcileUntilWritten reconciles, waits for the queue's answer, reconciles again and returns the
// config.
func (f *writeBackFixture) reconcileUntilWritten() *v1alpha1.RollingUpgradeConfig {
	f.t.Helper()
	f.reconcile()
	select {
	case <-f.woken:
	case <-time.After(30 * time.Second):
		f.t.Fatal("the queue never answered")
	}
	f.reconcile()
	return f.config()
}

func (f *writeBackFixture) config() *v1alpha1.RollingUpgradeConfig {
	f.t.Helper()
	var got v1alpha1.RollingUpgradeConfig
	if err := f.c.Get(f.ctx, f.key, &got); err != nil {
		f.t.Fatal(err)
	}
	return &got
}

func (f *writeBackFixture) setStatus(ruc *v1alpha1.RollingUpgradeConfig) {
	f.t.Helper()
	if err := f.c.Status().Update(f.ctx, ruc); err != nil {
		f.t.Fatal(err)
	}
}

func (f *writeBackFixture) show(path string) string {
	return gittest.Git(f.t, f.bare, "show", "main:"+path)
}
func (f *writeBackFixture) head() string {
	return strings.TrimSpace(gittest.Git(f.t, f.bare, "rev-parse", "main"))
}

// A config's outcomes reach Git, through the real git http-backend: the version that passed into
// the kustomization, the record, the preset of failed versions. Git failing (credentials refused)
// turns the condition False with one Warning event and no secret, and once the credentials are
// mended the write goes through without a person asking again.
func TestGitWriteBackWritesOutcomesAndSaysWhenItCannot(t *testing.T) {
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web # the shop\n  newTag: 1.2.0\n"},
		v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.3.0", FailedVersions: []string{"1.4.0"},
			VersionHistory: []v1alpha1.VersionHistoryEntry{{Version: "1.3.0", Status: v1alpha1.ResultHealthy}, {Version: "1.4.0", Status: v1alpha1.ResultRolledBack}}})
	git, ctx, c, rec, secret := f.git, f.ctx, f.c, f.rec, f.secret
	reconcile, reconcileUntilWritten, show, head := f.reconcile, f.reconcileUntilWritten, f.show, f.head
	bare := f.bare

	// The engine has not looked at the config yet: nothing to tell Git.
	if res := reconcile(); res.RequeueAfter != 0 || git.Requests.Load() != 0 {
		t.Fatalf("a config the engine has not seen was written (requeue %s, %d requests)", res.RequeueAfter, git.Requests.Load())
	}
	seen := f.config()
	seen.Status.ObservedGeneration = 1
	f.setStatus(seen)

	got := reconcileUntilWritten()
	cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	if cond == nil || cond.Status != metav1.ConditionTrue || got.Status.GitWriteBack == nil || got.Status.GitWriteBack.Commit != head() {
		t.Fatalf("after the write: condition %+v, status %+v, head %s", cond, got.Status.GitWriteBack, head())
	}
	if k := show("prod/kustomization.yaml"); k != "images:\n- name: ghcr.io/acme/web # the shop\n  newTag: 1.3.0\n" {
		t.Errorf("kustomization:\n%s", k)
	}
	if rec := show(".rollgate/shop/web.yaml"); !strings.Contains(rec, "currentVersion: 1.3.0\nfailedVersions:\n- 1.4.0\n") {
		t.Errorf("record:\n%s", rec)
	}
	if p := show(".rollgate/renovate.json"); !strings.Contains(p, `"allowedVersions": "!/^(?:1\\.4\\.0)$/"`) {
		t.Errorf("preset:\n%s", p)
	}
	if msg := gittest.Git(t, bare, "log", "-1", "--format=%an <%ae>: %s", "main"); msg != "rollgate <rollgate@rollgate.dev>: rollgate: shop/web: 1.4.0 failed its health check; back on 1.3.0\n" {
		t.Errorf("commit: %q", msg)
	}

	// Nothing new in the status: no write.
	pushes, commit := git.Pushes.Load(), head()
	if res := reconcile(); res.RequeueAfter != 0 || git.Pushes.Load() != pushes || head() != commit {
		t.Errorf("a settled config wrote again (requeue %s, %d pushes)", res.RequeueAfter, git.Pushes.Load()-pushes)
	}

	// The credentials are refused while another version fails: False, one Warning event, no secret.
	secret.Data["password"] = []byte("wrong-secret-value")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	got.Status.FailedVersions = append(got.Status.FailedVersions, "1.5.0")
	f.setStatus(got)
	got = reconcileUntilWritten()
	cond = apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.EventGitWriteBackFailed ||
		!strings.Contains(cond.Message, "authentication") || strings.Contains(cond.Message, "wrong-secret-value") {
		t.Fatalf("with refused credentials: condition %+v", cond)
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d events, want one Warning", len(rec.Events))
	}
	if e := <-rec.Events; !strings.HasPrefix(e, "Warning GitWriteBackFailed") || strings.Contains(e, "wrong-secret-value") {
		t.Errorf("event %q", e)
	}

	// Mended: the queue tries again after its backoff, with the credentials read again.
	secret.Data["password"] = []byte(git.Password)
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack); i++ {
		got = reconcileUntilWritten()
	}
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack) {
		t.Fatalf("never written after the credentials were mended: %+v", got.Status.Conditions)
	}
	if p := show(".rollgate/renovate.json"); !strings.Contains(p, `"allowedVersions": "!/^(?:1\\.4\\.0|1\\.5\\.0)$/"`) {
		t.Errorf("preset after the second failure:\n%s", p)
	}
	if len(rec.Events) != 0 {
		t.Errorf("%d more events", len(rec.Events))
	}
}

// A cluster rebuilt from Git: the config applied again, its status empty of failures, while its
// record in Git lists the versions that failed in its earlier life. The record keeps them, the
// status learns them, and from then on the status rules: a version a person takes off the failed
// list leaves the record.
func TestARebuiltConfigLearnsTheFailedVersionsOfItsRecord(t *testing.T) {
	record := "config: shop/web\nimage: ghcr.io/acme/web\ncurrentVersion: 1.3.0\nfailedVersions:\n- 1.4.0\n- 1.5.0\n"
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.3.0\n",
		".rollgate/shop/web.yaml": record}, v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1, CurrentVersion: "1.3.0"})

	got := f.reconcileUntilWritten()
	if strings.Join(got.Status.FailedVersions, ",") != "1.4.0,1.5.0" || !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack) {
		t.Fatalf("status after the first write: failed %v, conditions %+v", got.Status.FailedVersions, got.Status.Conditions)
	}
	if rec := f.show(".rollgate/shop/web.yaml"); !strings.Contains(rec, "failedVersions:\n- 1.4.0\n- 1.5.0\n") {
		t.Errorf("the record lost versions:\n%s", rec)
	}
	if p := f.show(".rollgate/renovate.json"); !strings.Contains(p, `1\\.4\\.0|1\\.5\\.0`) {
		t.Errorf("preset:\n%s", p)
	}
	pushes := f.git.Pushes.Load()
	if f.reconcile(); f.git.Pushes.Load() != pushes {
		t.Error("the adopted status was written again")
	}

	got.Status.FailedVersions = []string{"1.4.0"} // a person allows 1.5.0 again
	f.setStatus(got)
	f.reconcileUntilWritten()
	if rec := f.show(".rollgate/shop/web.yaml"); !strings.Contains(rec, "failedVersions:\n- 1.4.0\n") || strings.Contains(rec, "1.5.0") {
		t.Errorf("the record after 1.5.0 was allowed again:\n%s", rec)
	}
	if p := f.show(".rollgate/renovate.json"); strings.Contains(p, "1\\.5\\.0") {
		t.Errorf("the preset still refuses 1.5.0:\n%s", p)
	}
}

// A config created again over a record left in Git (a cluster rebuilt, a config deleted and
// applied again) learns the record's failed versions, but not its current version as a target: the
// record is evidence of what ran, and the workload may run a newer version by now. Neither the
// renderer nor Git's workload file is then moved back without a checked rollout: the config
// records what the workload runs, as any new config does.
func TestARecordInGitIsNoTarget(t *testing.T) {
	for _, mode := range []v1alpha1.GitWriteBackMode{v1alpha1.ModeClusterFirst, v1alpha1.ModeGitFirst} {
		t.Run(string(mode), func(t *testing.T) {
			record := "config: shop/web\nimage: ghcr.io/acme/web\ncurrentVersion: 1.0.0\nfailedVersions:\n- 1.1.0\n"
			kustomization := "images:\n- name: ghcr.io/acme/web\n  newTag: 1.2.0\n"
			f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": kustomization, ".rollgate/shop/web.yaml": record},
				v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1})
			ruc := f.config()
			ruc.Spec.GitWriteBack.Mode = mode
			if err := f.c.Update(f.ctx, ruc); err != nil {
				t.Fatal(err)
			}
			got := f.reconcileUntilWritten()
			st := got.Status
			if st.CurrentImage != "" || st.CurrentVersion != "" || strings.Join(st.FailedVersions, ",") != "1.1.0" {
				t.Fatalf("status after reading the record: current %q %q, failed %v; want the failed versions alone", st.CurrentVersion, st.CurrentImage, st.FailedVersions)
			}
			if img, _ := rollout.RenderImage(got, f.r.Clock.Now()); img != "" {
				t.Errorf("the renderer would write %s into the workload", img)
			}
			pushes := f.git.Pushes.Load()
			f.reconcile()
			if k := f.show("prod/kustomization.yaml"); k != kustomization || f.git.Pushes.Load() != pushes {
				t.Errorf("after another look, %d pushes; the workload's file:\n%s", f.git.Pushes.Load()-pushes, k)
			}
		})
	}
}

// A GitWriteBack with a signing key signs its commits; a key that cannot be used (here: the wrong
// passphrase) writes nothing, says why without the key or the passphrase, with one Warning event.
func TestCommitsAreSignedWithTheKeyOfTheSecret(t *testing.T) {
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.2.0\n"},
		v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1, CurrentVersion: "1.3.0"})
	private, public := gittest.SigningKey(t, "correct horse")
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "signing"},
		Data: map[string][]byte{"git.asc": private, "passphrase": []byte("battery staple")}}
	if err := f.c.Create(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	var gwb v1alpha1.GitWriteBack
	if err := f.c.Get(f.ctx, types.NamespacedName{Namespace: "shop", Name: "fleet"}, &gwb); err != nil {
		t.Fatal(err)
	}
	gwb.Spec.SigningKey = &v1alpha1.GitSigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}
	if err := f.c.Update(f.ctx, &gwb); err != nil {
		t.Fatal(err)
	}

	initial := f.head()
	f.reconcile()
	cond := apimeta.FindStatusCondition(f.config().Status.Conditions, v1alpha1.ConditionGitWriteBack)
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "passphrase does not decrypt") ||
		strings.Contains(cond.Message, "staple") || f.head() != initial {
		t.Fatalf("with the wrong passphrase: condition %+v, head moved %v", cond, f.head() != initial)
	}
	if len(f.rec.Events) != 1 || !strings.HasPrefix(<-f.rec.Events, "Warning GitWriteBackFailed") {
		t.Fatal("want one Warning event")
	}

	key.Data["passphrase"] = []byte("correct horse")
	if err := f.c.Update(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := f.reconcileUntilWritten(); !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack) {
		t.Fatalf("not written once the passphrase was mended: %+v", got.Status.Conditions)
	}
	repo, err := git.PlainOpen(f.bare)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(plumbing.NewHash(f.head()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commit.Verify(string(public)); err != nil {
		t.Errorf("the commit's signature does not verify: %v (signature %q)", err, commit.PGPSignature)
	}
}

// Over SSH the Secret holds the key and known_hosts; without known_hosts nothing is written.
func TestAGitWriteBackOverSSH(t *testing.T) {
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.2.0\n"},
		v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1, CurrentVersion: "1.3.0"})
	srv := f.git.ServeSSH(t)
	var gwb v1alpha1.GitWriteBack
	if err := f.c.Get(f.ctx, types.NamespacedName{Namespace: "shop", Name: "fleet"}, &gwb); err != nil {
		t.Fatal(err)
	}
	gwb.Spec.URL = srv.URL + "/fleet.git"
	if err := f.c.Update(f.ctx, &gwb); err != nil {
		t.Fatal(err)
	}
	f.secret.Data = map[string][]byte{"identity": srv.Identity}
	if err := f.c.Update(f.ctx, f.secret); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	cond := apimeta.FindStatusCondition(f.config().Status.Conditions, v1alpha1.ConditionGitWriteBack)
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "no known_hosts") || f.git.Requests.Load() != 0 {
		t.Fatalf("without known_hosts: condition %+v, %d requests", cond, f.git.Requests.Load())
	}

	f.secret.Data["known_hosts"] = []byte(srv.KnownHosts + "\n")
	if err := f.c.Update(f.ctx, f.secret); err != nil {
		t.Fatal(err)
	}
	if got := f.reconcileUntilWritten(); !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack) {
		t.Fatalf("not written over SSH: %+v", got.Status.Conditions)
	}
	if k := f.show("prod/kustomization.yaml"); k != "images:\n- name: ghcr.io/acme/web\n  newTag: 1.3.0\n" || f.git.Pushes.Load() != 1 {
		t.Errorf("kustomization after the write over SSH (%d pushes):\n%s", f.git.Pushes.Load(), k)
	}
}

// A GitWriteBack pointed at another repository: the config writes there as one that never wrote,
// reading its record there first, and learns the versions that failed according to it.
func TestAnotherRepositoryIsReadBeforeItIsWritten(t *testing.T) {
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.2.0\n"},
		v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1, CurrentVersion: "1.3.0"})
	first := f.reconcileUntilWritten()
	if first.Status.GitWriteBack == nil || !strings.HasSuffix(first.Status.GitWriteBack.Repository, "/fleet.git#main") {
		t.Fatalf("after the first write: %+v", first.Status.GitWriteBack)
	}
	url := f.git.Repo(t, "elsewhere", map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.3.0\n",
		".rollgate/shop/web.yaml": "config: shop/web\nimage: ghcr.io/acme/web\ncurrentVersion: 1.3.0\nfailedVersions:\n- 1.9.0\n"})
	var gwb v1alpha1.GitWriteBack
	if err := f.c.Get(f.ctx, types.NamespacedName{Namespace: "shop", Name: "fleet"}, &gwb); err != nil {
		t.Fatal(err)
	}
	gwb.Spec.URL = url
	if err := f.c.Update(f.ctx, &gwb); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	if st := f.config().Status.GitWriteBack; st != nil {
		t.Fatalf("the status still says %+v was written", st)
	}
	got := f.reconcileUntilWritten()
	if st := got.Status.GitWriteBack; st == nil || !strings.HasSuffix(st.Repository, "/elsewhere.git#main") ||
		strings.Join(got.Status.FailedVersions, ",") != "1.9.0" {
		t.Errorf("after the move: %+v, failed %v", st, got.Status.FailedVersions)
	}
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A GitWriteBack's Secrets are read once however many of its configs ask (a Git outage wakes them
// all at each retry), again once it changes, and again after CredentialsTTL, to see a mended Secret.
func TestTheCredentialsOfAGitWriteBackAreReadOncePerTTL(t *testing.T) {
	f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images: []\n"}, v1alpha1.RollingUpgradeConfigStatus{})
	reads := &countingReader{Reader: f.c}
	now := clocktesting.NewFakePassiveClock(time.Now())
	r := &GitWriteBackReconciler{Client: f.c, APIReader: reads, Recorder: f.rec, Clock: now, Queue: f.r.Queue, CredentialsTTL: 30 * time.Second}
	var gwb v1alpha1.GitWriteBack
	if err := f.c.Get(f.ctx, types.NamespacedName{Namespace: "shop", Name: "fleet"}, &gwb); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if c := r.credentials(f.ctx, &gwb); c.err != nil {
			t.Fatal(c.err)
		}
	}
	if reads.gets != 1 {
		t.Errorf("%d reads for 100 asks, want 1", reads.gets)
	}
	gwb.ResourceVersion += "1" // the GitWriteBack changed: its Secrets may be others
	r.credentials(f.ctx, &gwb)
	now.SetTime(now.Now().Add(r.CredentialsTTL))
	r.credentials(f.ctx, &gwb)
	if reads.gets != 3 {
		t.Errorf("%d reads, want 3: once more after the change, once more after the TTL", reads.gets)
	}
}

// The admin who owns a GitWriteBack's credential says which paths of the repository the configs of
// that namespace may have written with it (the Secret's allowedPaths): a tenant who points its
// config or GitWriteBack at another team's files gets a condition that says so, and nothing is
// written; within the paths, everything is.
func TestACredentialWritesOnlyThePathsItAllows(t *testing.T) {
	for _, tc := range []struct {
		name, allowed, refused string
	}{
		{"another team's file", "apps/shop/\n.rollgate/shop/\n.rollgate/renovate.json", "prod/kustomization.yaml"},
		{"another team's records", "prod/kustomization.yaml, .rollgate/renovate.json", ".rollgate/shop/web.yaml"},
		{"within the paths", "prod/\n.rollgate/", ""},
		{"a pattern within a directory", "prod/*.yaml\n.rollgate/shop/*\n.rollgate/renovate.json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWriteBackFixture(t, map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.2.0\n"},
				v1alpha1.RollingUpgradeConfigStatus{ObservedGeneration: 1, CurrentVersion: "1.3.0"})
			f.secret.Data["allowedPaths"] = []byte(tc.allowed)
			if err := f.c.Update(f.ctx, f.secret); err != nil {
				t.Fatal(err)
			}
			if tc.refused != "" {
				f.reconcile()
				c := apimeta.FindStatusCondition(f.config().Status.Conditions, v1alpha1.ConditionGitWriteBack)
				if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, tc.refused+" is not among the paths Secret \"git\" allows") {
					t.Errorf("condition %+v; want %s refused", c, tc.refused)
				}
				if n := f.git.Pushes.Load(); n != 0 {
					t.Errorf("%d pushes", n)
				}
				return
			}
			got := f.reconcileUntilWritten()
			if !apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionGitWriteBack) || !strings.Contains(f.show("prod/kustomization.yaml"), "newTag: 1.3.0") {
				t.Errorf("conditions %+v, file %s", got.Status.Conditions, f.show("prod/kustomization.yaml"))
			}
		})
	}
}
