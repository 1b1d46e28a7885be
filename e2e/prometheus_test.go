//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// promServer is a real Prometheus (Debian's package, installed by `make prometheus-tools`) that
// scrapes rollgate managers every second and evaluates rollgate's alert rules.
type promServer struct {
	api  promv1.API
	addr string // host:port of its HTTP API
	cmd  *exec.Cmd
	args []string
}

// startPrometheus runs Prometheus with config/prometheus/rollgate.rules.yaml, scraping the given
// metrics addresses as job "rollgate" with the targets' labels honoured (as the ServiceMonitor
// does), until the test ends.
func startPrometheus(t *testing.T, targets ...string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not installed: run `make prometheus-tools` (the e2e target does): %v", err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
- %s
scrape_configs:
- job_name: rollgate
  honor_labels: true
  static_configs:
  - targets: ['%s']
`, filepath.Join(repoRoot, "config", "prometheus", "rollgate.rules.yaml"), strings.Join(targets, "', '"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	p := &promServer{api: promv1.NewAPI(c), addr: addr, args: []string{bin, "--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr}}
	p.run(t)
	return p
}

// run starts the Prometheus process and waits until it is ready.
func (p *promServer) run(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	runProcess(t, "prometheus", p.cmd)
	waitStatus(t, "http://"+p.addr+"/-/ready", "", http.StatusOK)
}

// stop ends the Prometheus process (SIGTERM, as an orderly shutdown) and waits until it is gone.
func (p *promServer) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// query evaluates an instant query now.
func (p *promServer) query(ctx context.Context, q string) (model.Value, error) {
	v, _, _, err := p.api.Query(ctx, q, time.Now())
	return v, err
}

// waitQuery waits until an instant query returns a vector whose every sample satisfies cond, and
// at least one sample.
func (p *promServer) waitQuery(t *testing.T, q string, cond func(float64) bool) {
	t.Helper()
	eventually(t, time.Minute, "Prometheus: "+q, func(ctx context.Context) (bool, string, error) {
		v, err := p.query(ctx, q)
		if err != nil {
			return false, err.Error(), nil
		}
		vec, _ := v.(model.Vector)
		for _, s := range vec {
			if !cond(float64(s.Value)) {
				return false, vec.String(), nil
			}
		}
		return len(vec) > 0, fmt.Sprintf("result %v", v), nil
	})
}
