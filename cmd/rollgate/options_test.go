package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
)

func TestParseOptions(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		check   func(options) bool
		wantErr string
	}{
		{name: "defaults suit a manager in the cluster", args: nil, check: func(o options) bool {
			return o.LeaderElect && o.LeaderElectionID == "rollgate.rollgate.dev" && o.MetricsAddr == ":8080" &&
				!o.MetricsSecure && o.ProbeAddr == ":8081" && o.Namespaces == nil && o.Kubeconfig == ""
		}},
		{name: "local run", args: []string{"--kubeconfig", "/tmp/kc", "--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"},
			check: func(o options) bool {
				return o.Kubeconfig == "/tmp/kc" && !o.LeaderElect && o.MetricsAddr == "127.0.0.1:0"
			}},
		{name: "namespaces are split and trimmed", args: []string{"--namespace", "shop, billing,,"},
			check: func(o options) bool { return slices.Equal(o.Namespaces, []string{"shop", "billing"}) }},
		{name: "secure metrics", args: []string{"--metrics-secure", "--metrics-bind-address=:8443"},
			check: func(o options) bool { return o.MetricsSecure && o.MetricsAddr == ":8443" }},
		{name: "zap log level", args: []string{"--zap-log-level=debug"},
			check: func(o options) bool { return o.zap.Level != nil && o.zap.Level.Enabled(zapcore.DebugLevel) }},
		{name: "all controllers by default", args: nil,
			check: func(o options) bool {
				return slices.Equal(o.Controllers, []string{"rollout", "renderer", "applicationversion", "gitwriteback"})
			}},
		{name: "a Git host on loopback must be allowed", args: []string{"--git-allow=127.0.0.1"},
			check: func(o options) bool {
				return !o.GitAllow.Refuses(netip.MustParseAddr("127.0.0.1")) && o.RegistryAllow.Refuses(netip.MustParseAddr("127.0.0.1")) &&
					o.GitAllow.Refuses(netip.MustParseAddr("169.254.169.254"))
			}},
		{name: "a bad Git allow list is refused", args: []string{"--git-allow=not a host"}, wantErr: "--git-allow"},
		{name: "four workers and a one-minute deadline by default", args: nil,
			check: func(o options) bool { return o.Concurrency == 4 && o.ReconcileTimeout == time.Minute }},
		{name: "no workers is refused", args: []string{"--concurrency=0"}, wantErr: "--concurrency must be at least 1"},
		{name: "50 API requests a second with bursts of 300 by default", args: nil,
			check: func(o options) bool { return o.KubeAPIQPS == 50 && o.KubeAPIBurst == 300 }},
		{name: "API client limits", args: []string{"--kube-api-qps=200", "--kube-api-burst=400"},
			check: func(o options) bool { return o.KubeAPIQPS == 200 && o.KubeAPIBurst == 400 }},
		{name: "no API requests is refused", args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps and --kube-api-burst must be positive"},
		{name: "no API burst is refused", args: []string{"--kube-api-burst=0"}, wantErr: "--kube-api-qps and --kube-api-burst must be positive"},
		{name: "20 registry requests a second by default", args: nil, check: func(o options) bool { return o.RegistryQPS == 20 }},
		{name: "no registry requests is refused", args: []string{"--registry-qps=0"}, wantErr: "--registry-qps must be positive"},
		{name: "loopback registries are refused by default", args: nil,
			check: func(o options) bool { return o.RegistryAllow.Refuses(netip.MustParseAddr("127.0.0.1")) }},
		{name: "registry allow list", args: []string{"--registry-allow", "10.0.0.0/8, 127.0.0.1,localhost"},
			check: func(o options) bool { return !o.RegistryAllow.Refuses(netip.MustParseAddr("127.0.0.1")) }},
		{name: "a bad registry allow entry is refused", args: []string{"--registry-allow=http://x"}, wantErr: `--registry-allow: "http://x" is neither`},
		{name: "no Prometheus by default, 10s a query", args: nil,
			check: func(o options) bool { return o.Prometheus.URL == "" && o.Prometheus.Timeout == 10*time.Second }},
		{name: "a Prometheus", args: []string{"--prometheus-url=https://prometheus.monitoring:9090", "--prometheus-bearer-token-file=/var/run/token"},
			check: func(o options) bool {
				return o.Prometheus.URL == "https://prometheus.monitoring:9090" && o.Prometheus.BearerTokenFile == "/var/run/token"
			}},
		{name: "a query timeout as long as a reconcile is refused", args: []string{"--prometheus-timeout=1m"},
			wantErr: "--prometheus-timeout must be positive and below --reconcile-timeout (1m0s), not 1m0s"},
		{name: "every config by default", args: nil, check: func(o options) bool { return o.Shard.Empty() }},
		{name: "one shard", args: []string{"--watch-label-selector=sharding.rollgate.dev/key=shard1"},
			check: func(o options) bool {
				return o.Shard.Matches(labels.Set{"sharding.rollgate.dev/key": "shard1"}) && !o.Shard.Matches(labels.Set{})
			}},
		{name: "everything outside the shards", args: []string{"--watch-label-selector=!sharding.rollgate.dev/key"},
			check: func(o options) bool {
				return o.Shard.Matches(labels.Set{}) && !o.Shard.Matches(labels.Set{"sharding.rollgate.dev/key": "shard1"})
			}},
		{name: "a bad selector is refused", args: []string{"--watch-label-selector=a b"}, wantErr: "--watch-label-selector:"},
		{name: "renderer alone", args: []string{"--controllers=renderer"},
			check: func(o options) bool { return slices.Equal(o.Controllers, []string{"renderer"}) }},
		{name: "unknown controller", args: []string{"--controllers=rollout,magic"}, wantErr: `unknown controller "magic"`},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"manager"}, wantErr: `unexpected argument "manager"`},
		{name: "empty lease name", args: []string{"--leader-election-id="}, wantErr: "--leader-election-id must not be empty"},
		{name: "bad log level", args: []string{"--zap-log-level=loud"}, wantErr: "loud"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("unexpected options: %+v", o)
			}
		})
	}
}

func TestRestConfigNamesTheMissingKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	_, err := options{Kubeconfig: "/does/not/exist"}.restConfig()
	if err == nil || !strings.Contains(err.Error(), "/does/not/exist") || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("error = %v", err)
	}
}
