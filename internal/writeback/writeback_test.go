package writeback

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitedit"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
)

var fleet = &v1alpha1.GitWriteBack{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "fleet"},
	Spec: v1alpha1.GitWriteBackSpec{Branch: "main", RecordDir: ".rollgate", RenovatePreset: ".rollgate/renovate.json"}}

func config(name, path, current string, failed ...string) *v1alpha1.RollingUpgradeConfig {
	c := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: v1alpha1.RollingUpgradeConfigSpec{Image: "ghcr.io/acme/" + name,
			GitWriteBack: &v1alpha1.GitWriteBackReference{Name: "fleet", Path: path}},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: current, FailedVersions: failed}}
	if current != "" {
		c.Status.CurrentImage = c.Spec.Image + ":" + current
	}
	return c
}

// The workload's file says the version that passed; a GitFirst config's says the one the engine
// wants to run, the version in flight while its health check runs.
func TestTheFileSaysWhatShouldRun(t *testing.T) {
	pinned := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations = map[string]string{v1alpha1.TargetImageAnnotation: c.Spec.Image + "@sha256:" + strings.Repeat("a", 64)}
	}
	cases := []struct {
		name string
		ruc  *v1alpha1.RollingUpgradeConfig
		want string
	}{
		{"ClusterFirst, idle: the version that passed", config("web", "k.yaml", "1.3.0"), "1.3.0"},
		{"ClusterFirst, a check runs: still the version that passed", with(config("web", "k.yaml", "1.3.0"), checking("1.4.0")), "1.3.0"},
		{"ClusterFirst, nothing passed yet: the file is left alone", config("web", "k.yaml", ""), ""},
		{"GitFirst, idle: the version that passed", with(config("web", "k.yaml", "1.3.0"), gitFirst), "1.3.0"},
		{"GitFirst, a check runs: the version in flight", with(config("web", "k.yaml", "1.3.0"), gitFirst, checking("1.4.0")), "1.4.0"},
		{"GitFirst, rolling back: the version that passed", with(config("web", "k.yaml", "1.3.0", "1.4.0"), gitFirst, rollingBack), "1.3.0"},
		{"GitFirst, pinned to a digest by hand: refused, the file keeps the version that passed", with(config("web", "k.yaml", "1.3.0"), gitFirst, pinned), "1.3.0"},
		{"GitFirst, its record not read yet: the file is left alone, even for a target set by hand",
			with(config("web", "k.yaml", ""), gitFirst, func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.GitWriteBack = nil
				c.Annotations = map[string]string{v1alpha1.TargetImageAnnotation: c.Spec.Image + ":1.4.0"}
			}), ""},
	}
	for _, tc := range cases {
		if got := Desire(tc.ruc, fleet).FileVersion; got != tc.want {
			t.Errorf("%s: the file says %q, want %q", tc.name, got, tc.want)
		}
	}
	idle, inFlight := Desire(with(config("web", "k.yaml", "1.3.0"), gitFirst), fleet), Desire(with(config("web", "k.yaml", "1.3.0"), gitFirst, checking("1.4.0")), fleet)
	if idle.Digest == inFlight.Digest {
		t.Error("a GitFirst rollout's start leaves the digest as it was: nothing would be written")
	}
}

func TestDesireDependsOnWhatGitMustSayAlone(t *testing.T) {
	base := Desire(config("web", "prod/kustomization.yaml", "1.3.0", "1.4.0"), fleet)
	if !base.Kustomization || base.RecordPath != ".rollgate/shop/web.yaml" || base.Marker != "shop:web" {
		t.Errorf("desired %+v", base)
	}
	same := config("web", "prod/kustomization.yaml", "1.3.0", "1.4.0", "1.4.0")
	same.Status.Phase, same.Status.LastCheck = v1alpha1.PhaseCompleted, &metav1.Time{Time: time.Now()}
	if Desire(same, fleet).Digest != base.Digest {
		t.Error("the digest changed with what Git does not hold (phase, last check, a failed version listed twice)")
	}
	for name, other := range map[string]*v1alpha1.RollingUpgradeConfig{
		"another version passed": config("web", "prod/kustomization.yaml", "1.3.1", "1.4.0"),
		"another version failed": config("web", "prod/kustomization.yaml", "1.3.0", "1.4.0", "1.5.0"),
		"another file":           config("web", "prod/values.yaml", "1.3.0", "1.4.0"),
		"another config":         config("api", "prod/kustomization.yaml", "1.3.0", "1.4.0"),
	} {
		if Desire(other, fleet).Digest == base.Digest {
			t.Errorf("%s: same digest", name)
		}
	}
	for _, p := range []string{"kustomization.yaml", "a/kustomization.yml", "a/b/Kustomization"} {
		if !IsKustomization(p) {
			t.Errorf("%s is a kustomization", p)
		}
	}
	if IsKustomization("a/kustomization.yaml.bak") || IsKustomization("values.yaml") {
		t.Error("not kustomizations")
	}
}

// queueOn runs a queue against a repository of the real git http-backend and collects its wakes.
func queueOn(t testing.TB, git *gittest.Server) (*Queue, chan types.NamespacedName) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	woken := make(chan types.NamespacedName, 1000)
	q := &Queue{Write: gitwrite.Write, Clock: clock.RealClock{}, Wake: func(n types.NamespacedName) { woken <- n }}
	go func() { _ = q.Start(ctx) }()
	return q, woken
}

func submit(q *Queue, git *gittest.Server, url string, ruc *v1alpha1.RollingUpgradeConfig) {
	q.Submit(Request{Config: types.NamespacedName{Namespace: ruc.Namespace, Name: ruc.Name}, Desired: Desire(ruc, fleet),
		Repository: types.NamespacedName{Namespace: "shop", Name: "fleet"},
		Remote:     gitwrite.Remote{URL: url, Branch: "main", Auth: &githttp.BasicAuth{Username: git.User, Password: git.Password}},
		Author:     gitwrite.Commit{Name: "rollgate", Email: "rollgate@rollgate.dev"}, Outcome: OutcomeOf(ruc), Template: defaultMessage, Secrets: []string{git.Password}})
}

// One config whose file cannot take its version (no line marked) fails alone: the others in its
// commit are written, and none of its own files are.
func TestAConfigWhoseFileIsWrongHoldsUpNoOther(t *testing.T) {
	git := gittest.New(t)
	url := git.Repo(t, "fleet", map[string]string{
		"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n- name: ghcr.io/acme/api\n  newTag: 1.0.0\n",
		"prod/values.yaml":        "image: ghcr.io/acme/cart:1.0.0 # no marker\n",
	})
	q, woken := queueOn(t, git)
	for _, ruc := range []*v1alpha1.RollingUpgradeConfig{
		config("web", "prod/kustomization.yaml", "1.1.0"), config("cart", "prod/values.yaml", "1.1.0", "1.2.0"),
		config("api", "prod/kustomization.yaml", "1.1.0", "1.2.0"),
	} {
		submit(q, git, url, ruc)
	}
	results := map[string]Result{}
	for len(results) < 3 {
		select {
		case n := <-woken:
			results[n.Name], _ = q.Result(n)
		case <-time.After(30 * time.Second):
			t.Fatalf("results of %d configs only", len(results))
		}
	}
	if r := results["cart"]; r.Err == nil || r.Retrying || !strings.Contains(r.Err.Error(), `no line is marked for this config: end the image's line with # {"$rollgate": "shop:cart"}`) {
		t.Errorf("cart: %+v", r)
	}
	bare := git.Bare("fleet")
	for _, n := range []string{"web", "api"} {
		if r := results[n]; r.Err != nil || r.Commit == "" {
			t.Errorf("%s: %+v", n, r)
		}
	}
	if files := gittest.Git(t, bare, "ls-tree", "-r", "--name-only", "main"); files != ".rollgate/renovate.json\n.rollgate/shop/api.yaml\n.rollgate/shop/web.yaml\nprod/kustomization.yaml\nprod/values.yaml\n" {
		t.Errorf("files:\n%s", files)
	}
	if p := gittest.Git(t, bare, "show", "main:.rollgate/renovate.json"); !strings.Contains(p, "ghcr.io/acme/api") || strings.Contains(p, "cart") {
		t.Errorf("the preset must hold the failures written, and only those:\n%s", p)
	}
}

// BenchmarkQueue100Configs: 100 configs of one repository finish at once (each its own entry in one
// kustomization, a record and the preset), submitted together: the time until the last result, the
// commits and the pushes.
func BenchmarkQueue100Configs(b *testing.B) {
	const n = 100
	git := gittest.New(b)
	var k strings.Builder
	k.WriteString("images:\n")
	for i := range n {
		fmt.Fprintf(&k, "- name: ghcr.io/acme/app-%d\n  newTag: 1.0.0\n", i)
	}
	url := git.Repo(b, "fleet", map[string]string{"prod/kustomization.yaml": k.String()})
	q, woken := queueOn(b, git)
	bare := git.Bare("fleet")
	benchmarkRounds(b, q, woken, git, bare, n, func(i, round int) {
		submit(q, git, url, config(fmt.Sprintf("app-%d", i), "prod/kustomization.yaml", fmt.Sprintf("1.%d.0", round), "0.9.0"))
	})
}

// benchmarkRounds submits n configs' outcomes a round (submit(i, round)), waits for every result,
// and reports the time to the last result of the last round, and the commits and pushes a round.
func benchmarkRounds(b *testing.B, q *Queue, woken chan types.NamespacedName, git *gittest.Server, bare string, n int, submit func(i, round int)) {
	round := 0
	var last time.Duration
	for b.Loop() {
		round++
		start := time.Now()
		for i := range n {
			submit(i, round)
		}
		for range n {
			name := <-woken
			if r, _ := q.Result(name); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		last = time.Since(start)
	}
	commits := strings.Count(gittest.Git(b, bare, "log", "--format=%H", "main"), "\n") - 1
	b.ReportMetric(float64(last.Milliseconds()), "ms-to-last-result")
	b.ReportMetric(float64(commits)/float64(round), "commits/round")
	b.ReportMetric(float64(git.Pushes.Load())/float64(round), "pushes/round")
}

// A config that has never written (a rebuilt cluster) keeps what its record in Git says and the
// status does not know yet: the failed versions, reported to go into its status, and the version
// that passed while the status has none recorded, which stays in the record alone.
func TestAFirstWriteKeepsTheRecordOfAnEarlierLife(t *testing.T) {
	before := gitedit.Record{Config: "shop/web", Image: "ghcr.io/acme/web", CurrentVersion: "1.3.0", FailedVersions: []string{"1.4.0", "1.5.0"}}
	cases := []struct {
		name           string
		ruc            *v1alpha1.RollingUpgradeConfig
		wantCurrent    string
		wantFailed     string
		wantAdopted    string
		wantNoWorkload bool
	}{
		{"a rebuilt config, its workload recorded", config("web", "k.yaml", "1.3.0", "1.4.0"), "1.3.0", "1.4.0,1.5.0", "1.5.0", false},
		{"a rebuilt config, nothing recorded yet", config("web", "k.yaml", ""), "1.3.0", "1.4.0,1.5.0", "1.4.0,1.5.0", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Desire(tc.ruc, fleet)
			var adopted Adopted
			edits := d.Edits(&adopted)
			if tc.wantNoWorkload != (len(edits) == 1) {
				t.Fatalf("%d edits", len(edits))
			}
			out, err := edits[len(edits)-1].Change(before.Marshal(), memfs.New())
			if err != nil {
				t.Fatal(err)
			}
			got, err := gitedit.ParseRecord(out)
			if err != nil {
				t.Fatal(err)
			}
			if got.CurrentVersion != tc.wantCurrent || strings.Join(got.FailedVersions, ",") != tc.wantFailed {
				t.Errorf("record %+v", got)
			}
			if strings.Join(adopted.Failed, ",") != tc.wantAdopted {
				t.Errorf("adopted %+v; want failed %s", adopted, tc.wantAdopted)
			}
		})
	}
	// A record of an earlier life that does not read, or is of another image, is not overwritten.
	for _, tc := range []struct {
		name string
		old  []byte
		says string
	}{
		{"a record that does not read", []byte("config: shop/web\nimage: ghcr.io/acme/web\nfailedVersions: [1.4.0]\nnote: by hand\n"), "does not read"},
		{"a record of another image", gitedit.Record{Config: "shop/web", Image: "ghcr.io/acme/api", FailedVersions: []string{"1.4.0"}}.Marshal(), "of image ghcr.io/acme/api"},
	} {
		var adopted Adopted
		edits := Desire(config("web", "k.yaml", "1.3.0"), fleet).Edits(&adopted)
		if out, err := edits[len(edits)-1].Change(tc.old, memfs.New()); err == nil || out != nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: overwritten with\n%s (error %v, want one saying %q)", tc.name, out, err, tc.says)
		}
	}

	// Once written, the status is the truth: a version a person took off the failed list leaves the record.
	written := config("web", "k.yaml", "1.3.0", "1.4.0")
	written.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
	var adopted Adopted
	edits := Desire(written, fleet).Edits(&adopted)
	out, err := edits[len(edits)-1].Change(before.Marshal(), memfs.New())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := gitedit.ParseRecord(out); strings.Join(got.FailedVersions, ",") != "1.4.0" || adopted.Failed != nil {
		t.Errorf("record %+v, adopted %v", got, adopted)
	}
}

// A record names the image as the config did when it was written; the same repository spelt
// another way (docker.io/library/nginx for nginx) is the same record.
func TestARecordOfTheSameRepositorySpeltAnotherWayIsAdopted(t *testing.T) {
	ruc := config("web", "k.yaml", "")
	ruc.Spec.Image = "nginx"
	var adopted Adopted
	edits := Desire(ruc, fleet).Edits(&adopted)
	before := gitedit.Record{Config: "shop/web", Image: "docker.io/library/nginx", CurrentVersion: "1.27.0", FailedVersions: []string{"1.27.1"}}
	if _, err := edits[len(edits)-1].Change(before.Marshal(), memfs.New()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(adopted.Failed, ",") != "1.27.1" {
		t.Errorf("adopted %+v", adopted)
	}
}

// A config moved to another repository (its GitWriteBack's URL changed) is not written again to the
// old one, whose failures no longer reach it; a forgotten config is written nowhere.
func TestAConfigMovedOrForgottenLeavesItsOldWriter(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	started, release := make(chan struct{}, 1), make(chan struct{})
	fake := func(_ context.Context, r gitwrite.Remote, _ gitwrite.Commit, changes []gitwrite.Change) (gitwrite.Result, error) {
		if r.URL == "https://slow.example.com/fleet.git" {
			started <- struct{}{}
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		calls[r.URL]++
		if r.URL == "https://slow.example.com/fleet.git" {
			return gitwrite.Result{}, errors.New("unreachable")
		}
		if r.URL == "https://down.example.com/fleet.git" {
			return gitwrite.Result{}, errors.New("unreachable, token s3cret-token and key k3y-value")
		}
		return gitwrite.Result{Errors: make([]error, len(changes))}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	woken := make(chan types.NamespacedName, 100)
	q := &Queue{Write: fake, Clock: clock.RealClock{}, Wake: func(n types.NamespacedName) { woken <- n }}
	go func() { _ = q.Start(ctx) }()
	ruc := config("web", "k.yaml", "1.3.0")
	req := func(url string) Request {
		return Request{Config: types.NamespacedName{Namespace: "shop", Name: "web"}, Desired: Desire(ruc, fleet),
			Repository: types.NamespacedName{Namespace: "shop", Name: "fleet"}, Remote: gitwrite.Remote{URL: url, Branch: "main"},
			Outcome: OutcomeOf(ruc), Template: defaultMessage, Secrets: []string{"s3cret-token", "k3y-value"}}
	}
	q.Submit(req("https://down.example.com/fleet.git"))
	<-woken
	res, _ := q.Result(req("").Config)
	if res.Err == nil || strings.Contains(res.Err.Error(), "s3cret") || strings.Contains(res.Err.Error(), "k3y-value") {
		t.Fatalf("failure %v: want one without the secrets", res.Err)
	}
	q.Submit(req("https://up.example.com/fleet.git"))
	<-woken
	time.Sleep(Backoff(1) + 500*time.Millisecond) // the old writer's retry is due
	if res, _ := q.Result(req("").Config); res.Err != nil {
		t.Errorf("the old repository's failure reached the config: %v", res.Err)
	}
	mu.Lock()
	down := calls["https://down.example.com/fleet.git"]
	mu.Unlock()
	if down != 1 {
		t.Errorf("the old repository was written %d times, want once", down)
	}

	q.Submit(req("https://down.example.com/fleet.git"))
	<-woken
	q.Forget(req("").Config)
	time.Sleep(Backoff(2) + 500*time.Millisecond)
	mu.Lock()
	down = calls["https://down.example.com/fleet.git"]
	mu.Unlock()
	if _, ok := q.Result(req("").Config); ok || down != 2 {
		t.Errorf("a forgotten config: result kept %v, written %d times to the failing repository, want 2", ok, down)
	}

	// Forgotten while its write is under way: the answer is dropped, and the failure does not put
	// the config back in its writer's queue.
	q.Submit(req("https://slow.example.com/fleet.git"))
	<-started
	q.Forget(req("").Config)
	close(release)
	time.Sleep(Backoff(1) + 500*time.Millisecond) // the writer's retry would be due
	mu.Lock()
	slow := calls["https://slow.example.com/fleet.git"]
	mu.Unlock()
	if _, ok := q.Result(req("").Config); ok || slow != 1 {
		t.Errorf("forgotten mid-write: result kept %v, written %d times, want once", ok, slow)
	}
}

// BenchmarkQueueAtScale: configs of one repository of realistic size (a kustomization of each
// config's app and nine times as many other manifests of about 1 KiB) finish at once and are
// submitted together: the time until the last result is in Git, the commits and pushes it took, and
// the peak of the heap meanwhile (the clone is in memory; the shipped limit is 256 MiB). The issue's
// size is 1000 configs in 10,000 files: `-bench 'QueueAtScale/1000'`.
func BenchmarkQueueAtScale(b *testing.B) {
	for _, configs := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("%d-configs-%d-files", configs, 10*configs), func(b *testing.B) { benchmarkQueueAtScale(b, configs, 10*configs) })
	}
}

func benchmarkQueueAtScale(b *testing.B, configs, files int) {
	git := gittest.New(b)
	repo := map[string]string{}
	for i := range configs {
		repo[fmt.Sprintf("apps/app-%d/kustomization.yaml", i)] = fmt.Sprintf("resources:\n- deployment.yaml\nimages:\n- name: ghcr.io/acme/app-%d\n  newTag: 1.0.0\n", i)
	}
	manifest := strings.Repeat("# a manifest of the fleet, as many others\nkind: ConfigMap\n", 18)
	for i := configs; i < files; i++ {
		repo[fmt.Sprintf("apps/app-%d/manifest-%d.yaml", i%configs, i)] = manifest
	}
	url := git.Repo(b, "fleet", repo)
	q, woken := queueOn(b, git)
	bare := git.Bare("fleet")
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() { // the heap's peak, sampled
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	defer close(done)
	benchmarkRounds(b, q, woken, git, bare, configs, func(i, round int) {
		name := fmt.Sprintf("app-%d", i)
		ruc := config(name, fmt.Sprintf("apps/%s/kustomization.yaml", name), fmt.Sprintf("1.%d.0", round), "0.9.0")
		ruc.Spec.Image = "ghcr.io/acme/" + name
		submit(q, git, url, ruc)
	})
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// A person reverts rollgate's rollback commit in Git. Under GitFirst each verdict is written, even
// one that leaves the status's versions as they were: the rollback made again when the failed
// version comes back puts the version that passed back in the file.
func TestARollbackMadeAgainIsWrittenAgain(t *testing.T) {
	git := gittest.New(t)
	url := git.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.1.0\n"})
	q, woken := queueOn(t, git)
	rolledBack := with(config("web", "prod/kustomization.yaml", "1.0.0", "1.1.0"), gitFirst, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.VersionHistory = []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Status: v1alpha1.ResultRolledBack,
			AppliedAt: metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}}
	})
	write := func(ruc *v1alpha1.RollingUpgradeConfig) {
		t.Helper()
		submit(q, git, url, ruc)
		select {
		case n := <-woken:
			if r, _ := q.Result(n); r.Err != nil {
				t.Fatal(r.Err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no result")
		}
	}
	write(rolledBack)
	bare := git.Bare("fleet")
	if k := gittest.Git(t, bare, "show", "main:prod/kustomization.yaml"); !strings.Contains(k, "newTag: 1.0.0") {
		t.Fatalf("the rollback is not in Git:\n%s", k)
	}
	// The revert, by hand.
	work := t.TempDir()
	gittest.Git(t, work, "clone", "--quiet", bare, ".")
	gittest.Git(t, work, "revert", "--no-edit", "HEAD")
	gittest.Git(t, work, "push", "--quiet", "origin", "main")

	again := rolledBack.DeepCopy()
	again.Status.VersionHistory = append(again.Status.VersionHistory, v1alpha1.VersionHistoryEntry{Version: "1.1.0", Status: v1alpha1.ResultRolledBack,
		AppliedAt: metav1.NewTime(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)), Reason: "brought back through Git"})
	if Desire(again, fleet).Digest == Desire(rolledBack, fleet).Digest {
		t.Fatal("the rollback made again leaves the digest as it was: nothing would be written")
	}
	write(again)
	if k := gittest.Git(t, bare, "show", "main:prod/kustomization.yaml"); !strings.Contains(k, "newTag: 1.0.0") {
		t.Errorf("the rollback made again is not in Git:\n%s", k)
	}
	// ClusterFirst writes versions, not verdicts: its file says the version that passed anyway.
	cf := config("web", "prod/kustomization.yaml", "1.0.0", "1.1.0")
	cf2 := cf.DeepCopy()
	cf2.Status.VersionHistory = again.Status.VersionHistory
	if Desire(cf, fleet).Digest != Desire(cf2, fleet).Digest {
		t.Error("a ClusterFirst config writes again for a verdict that changes no version")
	}
}
