//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
)

// TestScenarioGitOutages: a GitFirst config against a real Git server that misbehaves.
//   - The Git host answers 401 with an endless body (a proxy's page, or an internal service's answer
//     a tenant points the GitWriteBack at): the manager reads a bounded part of it, its memory stays
//     within the shipped limit, and no byte of the body reaches the config's condition or events.
//   - Pushes fail from just before a one-off window opens: the version starts, its commit is not
//     made, and once the window has closed the start is withdrawn. When Git is back, Git gets the
//     last healthy tag, and the version never lands after the close.
func TestScenarioGitOutages(t *testing.T) {
	inNamespaceOnly(t)
	git := gittest.New(t)
	kustomization := "images:\n- name: " + appRepo + "\n  newTag: 1.0.0\n"
	url := git.Repo(t, "fleet", map[string]string{"shop/kustomization.yaml": kustomization})
	bare := git.Bare("fleet")

	const secretBody = "INTERNAL-ANSWER "
	var sent atomic.Int64
	endless := gittest.Interceptor(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		w.WriteHeader(http.StatusUnauthorized)
		chunk := []byte(strings.Repeat(secretBody, 4096))
		for sent.Load() < 4<<30 { // 4 GiB: far past any bound, and an end should the client read it all
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				break
			}
		}
		return true
	})
	git.Intercept.Store(&endless)

	s := newScenario(t, "gitoutage")
	opens := time.Now().Add(75 * time.Second).Truncate(time.Second)
	closes := opens.Add(30 * time.Second)
	s.create(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleet-git"},
			StringData: map[string]string{"username": git.User, "password": git.Password}},
		&v1alpha1.GitWriteBack{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
			Spec: v1alpha1.GitWriteBackSpec{URL: url, SecretRef: &meta.LocalObjectReference{Name: "fleet-git"}}},
		deployment(s.ns, "app", appRepo+":1.0.0", 2),
		&v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.ApplicationVersionSpec{Image: appRepo, Version: "1.0.0"}},
		config(func(c *v1alpha1.RollingUpgradeConfig) {
			c.Spec.GitWriteBack = &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "shop/kustomization.yaml",
				Mode: v1alpha1.ModeGitFirst, ApplyTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
			c.Spec.Windows = []v1alpha1.CalendarWindow{{Name: "once", Type: v1alpha1.WindowAllow,
				Start: &metav1.Time{Time: opens}, End: &metav1.Time{Time: closes}}}
		}),
	)
	m := s.start("--git-allow", "127.0.0.1")

	// The endless 401: a bounded read, a plain condition.
	failing := s.waitConfig(time.Minute, "the 401 reported", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return apimeta.IsStatusConditionFalse(c.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	})
	cond := apimeta.FindStatusCondition(failing.Status.Conditions, v1alpha1.ConditionGitWriteBack)
	if strings.Contains(cond.Message, strings.TrimSpace(secretBody)) {
		t.Errorf("the server's body reached the condition: %s", cond.Message)
	}
	for _, e := range s.events() {
		if strings.Contains(e.Message, strings.TrimSpace(secretBody)) {
			t.Errorf("the server's body reached event %s: %s", e.Reason, e.Message)
		}
	}
	time.Sleep(5 * time.Second) // the retries after the backoff meet the same answer
	peak := peakRSS(t, m.cmd.Process.Pid)
	t.Logf("the 401: %s; the server sent %d MiB; the manager's peak RSS %d MiB", cond.Message, sent.Load()>>20, peak>>20)
	if sent.Load() > 256<<20 {
		t.Errorf("the manager read %d MiB of a 401's body", sent.Load()>>20)
	}
	if peak > 200<<20 {
		t.Errorf("the manager's peak RSS is %d MiB, past what its 256Mi limit leaves", peak>>20)
	}

	// The GitWriteBack says it too, once, naming the config.
	gwb := waitWriteBack(t, s.ns, "fleet", "its Ready False", func(st v1alpha1.WriteBackStatus) bool {
		return apimeta.IsStatusConditionFalse(st.Conditions, meta.ReadyCondition)
	})
	if st := gwb.Status; st.FailingCount != 1 || st.ConfigCount != 1 || !strings.HasPrefix(st.LastError, "app: ") || !slices.Equal(st.Configs, []string{"app"}) {
		t.Errorf("the GitWriteBack's status during the 401: %+v", st)
	}

	// Git answers again; the config reads its record and writes it.
	git.Intercept.Store(nil)
	waitWritten(t, s.ns, "app", "the first record written", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	waitWriteBack(t, s.ns, "fleet", "Ready again, with its last commit", func(st v1alpha1.WriteBackStatus) bool {
		return apimeta.IsStatusConditionTrue(st.Conditions, meta.ReadyCondition) && st.LastCommit != "" && st.LastError == "" && st.FailingCount == 0
	})
	s.announce("1.1.0")
	s.waitConfig(time.Minute, "1.1.0 held for the window", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.AvailableVersion == "1.1.0" && c.Status.Phase == v1alpha1.PhasePending
	})

	// Pushes fail from just before the window opens: the start is made, its commit is not.
	time.Sleep(time.Until(opens.Add(-5 * time.Second)))
	refused := gittest.Interceptor(func(w http.ResponseWriter, r *http.Request) bool {
		if !gittest.IsPush(r) {
			return false
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return true
	})
	git.Intercept.Store(&refused)
	s.waitEvent(time.Minute, v1alpha1.EventUpdateStarting, "1.1.0")
	s.waitEvent(closes.Add(2*time.Minute).Sub(time.Now()), v1alpha1.EventNotAppliedFromGit, "was not committed to Git before the calendar closed")
	if at := firstEventTime(s, v1alpha1.EventNotAppliedFromGit); at.Before(closes) {
		t.Errorf("withdrawn at %s, before the window closed at %s", at, closes)
	}

	// Git is back: it gets 1.0.0 (it never said anything else), and 1.1.0 does not start after the close.
	git.Intercept.Store(nil)
	c := waitWritten(t, s.ns, "app", "the withdrawal written", func(c *v1alpha1.RollingUpgradeConfig) bool {
		n := len(c.Status.VersionHistory)
		return n > 0 && c.Status.VersionHistory[n-1].Status == v1alpha1.ResultWithdrawn
	})
	time.Sleep(10 * time.Second) // room for a wrong start
	if n := s.countEvents(v1alpha1.EventUpdateStarting); n != 1 {
		t.Errorf("%d starts, want the one in the window: %s", n, describeConfig(s.config()))
	}
	if got := gitShow(bare, "shop/kustomization.yaml"); got != kustomization {
		t.Errorf("Git says after the outage:\n%s", got)
	}
	if log := gittest.Git(t, "", "--git-dir", bare, "log", "-p", "--format=%s", "main", "--", "shop/kustomization.yaml"); strings.Contains(log, "newTag: 1.1.0") {
		t.Errorf("1.1.0 was committed:\n%s", log)
	}
	if img := s.deploymentImage("app"); img != appRepo+":1.0.0" {
		t.Errorf("the Deployment runs %s", img)
	}
	if c.Status.CurrentVersion != "1.0.0" || len(c.Status.FailedVersions) != 0 {
		t.Errorf("current %s, failed %v: a withdrawal judges nothing", c.Status.CurrentVersion, c.Status.FailedVersions)
	}
}

// peakRSS is the peak resident memory of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	p, err := procfs.NewProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	return st.VmHWM
}

// firstEventTime is when the first event of reason was seen.
func firstEventTime(s *scenario, reason string) time.Time {
	var first time.Time
	for _, e := range s.events() {
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if e.Reason == reason && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// waitWriteBack waits until cond holds for the status of GitWriteBack name in ns.
func waitWriteBack(t *testing.T, ns, name string, what string, cond func(v1alpha1.WriteBackStatus) bool) *v1alpha1.GitWriteBack {
	t.Helper()
	var gwb v1alpha1.GitWriteBack
	eventually(t, time.Minute, "GitWriteBack "+name+": "+what, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &gwb); err != nil {
			return false, "", err
		}
		return cond(gwb.Status), fmt.Sprintf("%+v", gwb.Status), nil
	})
	return &gwb
}
