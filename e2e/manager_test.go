//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// manager is a running rollgate binary.
type manager struct {
	cmd     *exec.Cmd
	metrics string // host:port
	probes  string // host:port
	exited  chan error
	log     string // the file its stdout and stderr go to
}

// startManager runs bin/rollgate against the cluster on free loopback ports and stops it when the
// test ends.
func startManager(t *testing.T, extra ...string) *manager {
	t.Helper()
	return startManagerOn(t, freeAddr(t), extra...)
}

// startManagerOn is startManager serving metrics on a given address, so that a restarted manager
// is the same scrape target.
func startManagerOn(t *testing.T, metricsAddr string, extra ...string) *manager {
	t.Helper()
	return startBinaryOn(t, managerBin, metricsAddr, extra...)
}

// startBinaryOn is startManagerOn for the manager binary bin.
func startBinaryOn(t *testing.T, bin, metricsAddr string, extra ...string) *manager {
	t.Helper()
	probes := freeAddr(t)
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probes,
	}, extra...)
	return runManager(t, exec.Command(bin, args...), metricsAddr, probes)
}

// runManager starts cmd, a manager serving metrics and probes on the given addresses, with its
// output in a log of the test's, and kills it when the test ends.
func runManager(t *testing.T, cmd *exec.Cmd, metrics, probes string) *manager {
	t.Helper()
	m := &manager{cmd: cmd, metrics: metrics, probes: probes, exited: make(chan error, 1)}
	log, err := os.CreateTemp(t.TempDir(), "manager-*.log")
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr, m.log = log, log, log.Name()
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.exited <- m.cmd.Wait() }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("manager log:\n%s", out)
		}
	})
	return m
}

// scrape reads the manager's metrics, by family name.
func (m *manager) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	_, body, err := get(context.Background(), "http://"+m.metrics+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// stop ends the manager as the kubelet ends a pod: SIGTERM, and SIGKILL after the grace period.
// It fails the test if the manager needed the SIGKILL or did not exit cleanly.
func (m *manager) stop(t *testing.T, grace time.Duration) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-m.exited:
		if err != nil {
			t.Errorf("the manager exited with %v after SIGTERM", err)
		}
	case <-time.After(grace):
		_ = m.cmd.Process.Kill()
		_ = <-m.exited
		t.Errorf("the manager did not stop within its grace period of %s", grace)
	}
}

// kill SIGKILLs the manager and waits until it is gone; its exit error is the kill's own.
func (m *manager) kill(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = <-m.exited
}

func freeAddr(t *testing.T) string {
	t.Helper()
	// Below the kernel's ephemeral ports: one of those, free now, may be taken by any outgoing
	// connection (the manager's own to the API server) before the manager binds it.
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				first = n
			}
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(10000+mathrand.IntN(first-10000)))
		if err != nil {
			continue // in use
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// get fetches a URL and returns status code and body; an error means nothing answered.
func get(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The secure metrics endpoint serves a self-signed certificate.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func waitStatus(t *testing.T, url, token string, want int) string {
	t.Helper()
	var body string
	eventually(t, time.Minute, "GET "+url+" answers "+fmt.Sprint(want), func(ctx context.Context) (bool, string, error) {
		code, b, err := get(ctx, url, token)
		if err != nil {
			return false, err.Error(), nil
		}
		body = b
		return code == want, fmt.Sprintf("status %d", code), nil
	})
	return body
}

func TestManagerServesProbesAndMetricsAndLeads(t *testing.T) {
	installCRDs(t) // the manager does not start without them
	lease := "rollgate-e2e-" + rand.String(5)
	m := startManager(t, "--leader-election-namespace", "default", "--leader-election-id", lease)

	waitStatus(t, "http://"+m.probes+"/healthz", "", http.StatusOK)
	waitStatus(t, "http://"+m.probes+"/readyz", "", http.StatusOK)

	key := client.ObjectKey{Namespace: "default", Name: lease}
	var l coordinationv1.Lease
	eventually(t, time.Minute, "the manager holds lease "+lease, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, key, &l); err != nil {
			return false, err.Error(), nil
		}
		h := l.Spec.HolderIdentity
		return h != nil && *h != "", "no holder", nil
	})
	body := waitStatus(t, "http://"+m.metrics+"/metrics", "", http.StatusOK)
	// The build the Makefile stamped: git describe of the checkout, in the metric, the log and
	// `rollgate version`.
	describe, err := exec.Command("git", "-C", repoRoot, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(describe))
	if out, err := exec.Command(os.Getenv("ROLLGATE_BIN"), "version").Output(); err != nil || !strings.HasPrefix(string(out), "rollgate "+version+" (commit ") {
		t.Errorf("rollgate version: %q, %v; want rollgate %s (commit …", out, err, version)
	}
	if log, err := os.ReadFile(m.log); err != nil || !strings.Contains(string(log), `"version":"rollgate `+version+` (commit `) {
		t.Errorf("the manager's log does not say it runs %s", version)
	}
	for _, series := range []string{`leader_election_master_status{name="` + lease + `"} 1`, "rest_client_requests_total",
		`rollgate_build_info{commit="`, `version="` + version + `"} 1`} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics does not show %s", series)
		}
	}

	// A clean stop releases the lease, so that a new leader need not wait for it to expire.
	m.stop(t, 30*time.Second)
	if err := k8s.Get(context.Background(), key, &l); err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %s after a clean stop", *h)
	}
}

// TestManagerSecureMetricsNeedAnAuthorizedToken: with --metrics-secure, /metrics answers only a
// bearer token that passes a TokenReview and may GET /metrics (the metrics-reader ClusterRole).
func TestManagerSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	ns := newNamespace(t, "metrics")
	mustKubectl(t, "-n", ns, "create", "serviceaccount", "scraper")
	mustKubectl(t, "-n", ns, "create", "serviceaccount", "stranger")
	mustKubectl(t, "apply", "-f", "config/rbac/metrics_reader_role.yaml")
	binding := "rollgate-e2e-metrics-" + ns
	mustKubectl(t, "create", "clusterrolebinding", binding, "--clusterrole", "metrics-reader", "--serviceaccount", ns+":scraper")
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "clusterrolebinding", binding) })
	scraper := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "scraper"))
	stranger := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "stranger"))

	m := startManager(t, "--leader-elect=false", "--metrics-secure")
	url := "https://" + m.metrics + "/metrics"
	waitStatus(t, url, "", http.StatusUnauthorized)
	waitStatus(t, url, stranger, http.StatusForbidden)
	if body := waitStatus(t, url, scraper, http.StatusOK); !strings.Contains(body, "rest_client_requests_total") {
		t.Error("authorized scrape returned no metrics")
	}
}
