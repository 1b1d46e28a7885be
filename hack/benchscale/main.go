// Command benchscale is `make bench-scale`: N Deployments, each under its own RollingUpgradeConfig,
// all fed by one ConfigMap, on a local cluster. It times one announced version from the
// announcement until all N configs are Completed, and the same rollout done by a bare client (one
// patch per Deployment, then wait until all are rolled out); it prints the manager's API requests
// per rollout by verb and resource, its CPU time and peak RSS, and then its writes and reconciles
// per minute while nothing changes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

const (
	namespace          = "scale"
	unrelatedNamespace = "unrelated"
	image              = "scale.local/app"
)

type flags struct {
	kubeconfig  string
	n           int
	unrelated   int
	idle        time.Duration
	manager     string
	managerArgs string
	managerEnv  string
	managerLog  string
	pids        string
}

func main() {
	var f flags
	flag.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	flag.IntVar(&f.n, "n", 1000, "configs (and Deployments) to roll out")
	flag.IntVar(&f.unrelated, "unrelated", 0, "unrelated ConfigMaps and Deployments to create first")
	flag.DurationVar(&f.idle, "idle", 5*time.Minute, "how long to watch the settled manager")
	flag.StringVar(&f.manager, "manager", "bin/rollgate", "the manager binary")
	flag.StringVar(&f.managerArgs, "manager-args", "", "extra flags for the manager, space-separated")
	flag.StringVar(&f.managerEnv, "manager-env", "", "extra environment of the manager alone (NAME=value, space-separated), such as the GOMEMLIMIT it is installed with")
	flag.StringVar(&f.managerLog, "manager-log", "bin/bench-scale-manager.log", "where the manager's log goes")
	flag.StringVar(&f.pids, "pids", "", "directory of the control plane's pid files (kwokctl's pids/), for its CPU time")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	// Interrupted, the run returns and stops the manager it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return err
	}
	// The bench's own client is not what is measured: let it go as fast as the API server does.
	cfg.QPS, cfg.Burst = 2000, 4000
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	watched, err := cache.New(cfg, cache.Options{Scheme: scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}, unrelatedNamespace: {}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = watched.Start(ctx) }()
	b := &bench{c: c, cache: watched, f: f}

	for _, ns := range []string{namespace, unrelatedNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	if f.unrelated > 0 {
		step("creating %d unrelated ConfigMaps and Deployments", f.unrelated)
		if err := b.createUnrelated(ctx); err != nil {
			return err
		}
		// The kube-controller-manager's first pass over them is done before anything is timed.
		if _, err := b.waitDeployments(ctx, unrelatedNamespace, f.unrelated, func(d *appsv1.Deployment) bool {
			return d.Status.ObservedGeneration >= d.Generation
		}); err != nil {
			return err
		}
	}
	step("creating %d Deployments at %s:1.0.0", f.n, image)
	if err := b.createDeployments(ctx); err != nil {
		return err
	}
	if _, err := b.waitRolledOut(ctx, "1.0.0"); err != nil {
		return err
	}

	step("bare client: setting %d images to 1.1.0", f.n)
	cpBare := controlPlaneCPU(f.pids)
	start := time.Now()
	if err := b.setImages(ctx, "1.1.0"); err != nil {
		return err
	}
	bareDone, err := b.waitRolledOut(ctx, "1.1.0")
	if err != nil {
		return err
	}
	bare := bareDone.Sub(start)
	cpBare = controlPlaneCPU(f.pids).minus(cpBare)

	step("starting the manager and %d configs at 1.1.0", f.n)
	m, err := startManager(ctx, f)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := b.createConfigs(ctx, "1.1.0"); err != nil {
		return err
	}
	if _, err := b.waitConfigs(ctx, func(r *v1alpha1.RollingUpgradeConfig) bool {
		return r.Status.CurrentVersion == "1.1.0" && r.Status.Phase == v1alpha1.PhaseIdle
	}); err != nil {
		return err
	}

	step("announcing 1.2.0")
	before, err := m.scrape(ctx)
	if err != nil {
		return err
	}
	cpRollgate := controlPlaneCPU(f.pids)
	start = time.Now()
	if err := b.announce(ctx, "1.2.0"); err != nil {
		return err
	}
	done, err := b.waitConfigs(ctx, func(r *v1alpha1.RollingUpgradeConfig) bool {
		return r.Status.CurrentVersion == "1.2.0" && r.Status.Phase == v1alpha1.PhaseCompleted
	})
	if err != nil {
		return err
	}
	took := done.Sub(start)
	cpRollgate = controlPlaneCPU(f.pids).minus(cpRollgate)

	// The rollouts' cost includes what follows their verdicts: counted after 30 s, when the idle
	// minutes begin.
	const settle = 30 * time.Second
	step("idle: %s after %s to settle", f.idle, settle)
	time.Sleep(settle)
	after, err := m.scrape(ctx)
	if err != nil {
		return err
	}
	time.Sleep(f.idle)
	idleEnd, err := m.scrape(ctx)
	if err != nil {
		return err
	}
	report(os.Stdout, f, measured{bare: bare, rollgate: took, cpBare: cpBare, cpRollgate: cpRollgate,
		before: before, after: after, idleEnd: idleEnd, peakRSS: m.peakRSS()})
	return nil
}

// measured is what a run found: times, control-plane CPU, and the manager's metrics before the
// announcement, after the rollouts settled (the start of the idle minutes) and at their end.
type measured struct {
	bare, rollgate         time.Duration
	cpBare, cpRollgate     cpuTimes
	before, after, idleEnd metrics
	peakRSS                float64
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type bench struct {
	c     client.Client
	cache cache.Cache
	f     flags
}

// parallel runs do(0..n-1) on 32 workers and returns the first error.
func parallel(n int, do func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error { return do(i) })
	}
	return g.Wait()
}

func appName(i int) string { return fmt.Sprintf("app-%05d", i) }

func deployment(ns, name, img string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
			},
		},
	}
}

// createUnrelated fills the cluster with what the manager must not be slowed by and should cache
// as little of as it can: unlabelled 1 KiB ConfigMaps, which it does not cache, and Deployments,
// which it does (any config may name any). The Deployments are paused and have no replicas: the
// kube-controller-manager then writes only their status, not a ReplicaSet each.
func (b *bench) createUnrelated(ctx context.Context) error {
	blob := strings.Repeat("x", 1024)
	return parallel(b.f.unrelated, func(i int) error {
		name := fmt.Sprintf("other-%05d", i)
		if err := b.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: unrelatedNamespace, Name: name},
			Data: map[string]string{"blob": blob}}); err != nil {
			return err
		}
		d := deployment(unrelatedNamespace, name, "unrelated.local/app:1.0.0", 0)
		d.Spec.Paused = true
		return b.c.Create(ctx, d)
	})
}

func (b *bench) createDeployments(ctx context.Context) error {
	return parallel(b.f.n, func(i int) error {
		return b.c.Create(ctx, deployment(namespace, appName(i), image+":1.0.0", 1))
	})
}

// setImages is the bare client: one patch per Deployment, nothing else.
func (b *bench) setImages(ctx context.Context, version string) error {
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"%s:%s"}]}}}}`, image, version)
	return parallel(b.f.n, func(i int) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appName(i)}}
		return b.c.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, patch))
	})
}

func (b *bench) createConfigs(ctx context.Context, version string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "versions", Labels: map[string]string{v1alpha1.VersionSourceLabel: "true"}},
		Data:       map[string]string{"app": version},
	}
	if err := b.c.Create(ctx, cm); err != nil {
		return err
	}
	return parallel(b.f.n, func(i int) error {
		return b.c.Create(ctx, &v1alpha1.RollingUpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appName(i)},
			Spec: v1alpha1.RollingUpgradeConfigSpec{
				TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: appName(i)},
				Image:     image,
				Sources:   []v1alpha1.VersionSource{{ConfigMap: &v1alpha1.ConfigMapSource{Name: "versions", Key: "app"}}},
			},
		})
	})
}

// announce is the one signal: the shared ConfigMap names the new version.
func (b *bench) announce(ctx context.Context, version string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "versions"}}
	return b.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"app":"%s"}}`, version)))
}

// waitRolledOut waits until all N Deployments run version on all their replicas and no old
// pod is left, and returns when that was first seen.
func (b *bench) waitRolledOut(ctx context.Context, version string) (time.Time, error) {
	want := image + ":" + version
	return b.waitDeployments(ctx, namespace, b.f.n, func(d *appsv1.Deployment) bool {
		s, r := d.Status, ptr.Deref(d.Spec.Replicas, 1)
		return d.Spec.Template.Spec.Containers[0].Image == want && s.ObservedGeneration >= d.Generation &&
			s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r
	})
}

// waitDeployments waits until n Deployments of namespace ns are done.
func (b *bench) waitDeployments(ctx context.Context, ns string, n int, done func(*appsv1.Deployment) bool) (time.Time, error) {
	return waitAll(ctx, n, func() (int, error) {
		var l appsv1.DeploymentList
		if err := b.cache.List(ctx, &l, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		count := 0
		for i := range l.Items {
			if done(&l.Items[i]) {
				count++
			}
		}
		return count, nil
	})
}

func (b *bench) waitConfigs(ctx context.Context, done func(*v1alpha1.RollingUpgradeConfig) bool) (time.Time, error) {
	return waitAll(ctx, b.f.n, func() (int, error) {
		var l v1alpha1.RollingUpgradeConfigList
		if err := b.cache.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		n := 0
		for i := range l.Items {
			if done(&l.Items[i]) {
				n++
			}
		}
		return n, nil
	})
}

// waitAll polls count every 100 ms until it reaches n, printing progress every 10 s; it gives up
// after 15 minutes without progress (at N=5,000 the first of them may take several minutes).
func waitAll(ctx context.Context, n int, count func() (int, error)) (time.Time, error) {
	last, lastChange, lastPrint := -1, time.Now(), time.Now()
	for {
		got, err := count()
		if err != nil {
			return time.Time{}, err
		}
		now := time.Now()
		if got >= n {
			return now, nil
		}
		if got != last {
			last, lastChange = got, now
		}
		if now.Sub(lastChange) > 15*time.Minute {
			return time.Time{}, fmt.Errorf("stuck at %d of %d for 15 minutes", got, n)
		}
		if now.Sub(lastPrint) > 10*time.Second {
			step("  %d of %d", got, n)
			lastPrint = now
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type manager struct {
	cmd     *exec.Cmd
	metrics string
}

func startManager(ctx context.Context, f flags) (*manager, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	logFile, err := os.Create(f.managerLog)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", f.kubeconfig, "--leader-elect=false", "--metrics-bind-address", addr,
		"--health-probe-bind-address", "127.0.0.1:0"}, strings.Fields(f.managerArgs)...)
	cmd := exec.CommandContext(ctx, f.manager, args...)
	cmd.Env = append(os.Environ(), strings.Fields(f.managerEnv)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // nor does it outlive a bench killed outright
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &manager{cmd: cmd, metrics: "http://" + addr + "/metrics"}
	for range 100 {
		if _, err := m.scrape(ctx); err == nil {
			return m, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.stop()
	return nil, fmt.Errorf("the manager serves no metrics on %s (log: %s)", addr, f.managerLog)
}

func (m *manager) stop() {
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
}

// peakRSS is the manager's high-water mark of resident memory (VmHWM), in MiB.
func (m *manager) peakRSS() float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kib / 1024
		}
	}
	return -1
}

// cpuTimes are the CPU seconds of each control-plane process, by name.
type cpuTimes map[string]float64

// controlPlaneCPU reads the user and system time of each process with a pid file in dir.
func controlPlaneCPU(dir string) cpuTimes {
	out := cpuTimes{}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		pid, err := os.ReadFile(dir + "/" + f.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses: utime and stime are the 12th and
		// 13th, in clock ticks of 1/100 s.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		out[strings.TrimSuffix(f.Name(), ".pid")] = (utime + stime) / 100
	}
	return out
}

func (c cpuTimes) minus(before cpuTimes) cpuTimes {
	out := cpuTimes{}
	for k, v := range c {
		out[k] = v - before[k]
	}
	return out
}

func (c cpuTimes) String() string {
	var parts []string
	t := 0.0
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, v))
		t += v
	}
	sort.Strings(parts)
	return fmt.Sprintf("%.1f (%s)", t, strings.Join(parts, ", "))
}

type metrics map[string]*dto.MetricFamily

func (m *manager) scrape(ctx context.Context) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sum adds the values of one metric family, keyed by the values of the given labels.
func (ms metrics) sum(name string, by ...string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		var key []string
		for _, b := range by {
			key = append(key, labels[b])
		}
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		out[strings.Join(key, " ")] += v
	}
	return out
}

// delta is what a metric gained between two scrapes, by key.
func delta(before, after metrics, name string, by ...string) map[string]float64 {
	out := after.sum(name, by...)
	for k, v := range before.sum(name, by...) {
		out[k] -= v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// writes are the requests that change something, by "verb resource"; events separately.
func writes(requests map[string]float64) (writes, events float64) {
	for k, v := range requests {
		verb, resource, _ := strings.Cut(k, " ")
		switch verb {
		case "get", "list", "watch":
		default:
			if strings.HasPrefix(resource, "events.") {
				events += v
			} else {
				writes += v
			}
		}
	}
	return writes, events
}

func report(w io.Writer, f flags, r measured) {
	n := float64(f.n)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-52s "+format+"\n", append([]any{label}, args...)...)
	}
	fmt.Fprintf(w, "\nrollgate bench-scale: %d configs, one announced version", f.n)
	if f.unrelated > 0 {
		fmt.Fprintf(w, ", %d unrelated ConfigMaps and Deployments", f.unrelated)
	}
	fmt.Fprintf(w, "; manager flags: %q, environment: %q\n", f.managerArgs, f.managerEnv)
	line(fmt.Sprintf("bare client (%d patches, until rolled out)", f.n), "%8.1f s", r.bare.Seconds())
	line("rollgate (announcement until all Completed)", "%8.1f s   %.2f× the bare client", r.rollgate.Seconds(),
		r.rollgate.Seconds()/r.bare.Seconds())
	requests := delta(r.before, r.after, "rollgate_api_requests_total", "verb", "resource")
	var verbs []string
	for k, v := range delta(r.before, r.after, "rest_client_requests_total", "method") {
		verbs = append(verbs, fmt.Sprintf("%s %.2f", k, v/n))
	}
	sort.Strings(verbs)
	line("API requests per rollout", "%8.2f   (%s)", total(requests)/n, strings.Join(verbs, ", "))
	var keys []string
	for k := range requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line("  "+k, "%8.2f", requests[k]/n)
	}
	wr, ev := writes(requests)
	line("writes per rollout, events aside", "%8.2f", wr/n)
	line("event writes per rollout", "%8.2f", ev/n)
	line("reconciles per rollout", "%8.2f", total(delta(r.before, r.after, "controller_runtime_reconcile_total", "controller"))/n)
	line("manager CPU for the rollouts", "%8.1f s", total(delta(r.before, r.after, "process_cpu_seconds_total")))
	line("manager peak RSS", "%8.1f MiB", r.peakRSS)
	line("manager heap in use after the rollouts", "%8.1f MiB", total(r.after.sum("go_memstats_heap_inuse_bytes"))/(1<<20))
	minutes := f.idle.Minutes()
	idleWrites, idleEvents := writes(delta(r.after, r.idleEnd, "rollgate_api_requests_total", "verb", "resource"))
	line(fmt.Sprintf("idle %s: writes per minute (events)", f.idle), "%8.2f   (%.2f)", idleWrites/minutes, idleEvents/minutes)
	line(fmt.Sprintf("idle %s: reconciles per minute", f.idle), "%8.2f",
		total(delta(r.after, r.idleEnd, "controller_runtime_reconcile_total", "controller"))/minutes)
	line("control plane CPU seconds, bare client", "%s", r.cpBare)
	line("control plane CPU seconds, rollgate", "%s", r.cpRollgate)
}
