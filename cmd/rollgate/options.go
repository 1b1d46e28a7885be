package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rollgate/rollgate/internal/controller"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/promquery"
	"github.com/rollgate/rollgate/internal/receiver"
	"github.com/rollgate/rollgate/internal/registry"
)

// options are the manager's command-line settings.
type options struct {
	Kubeconfig              string
	MetricsAddr             string
	MetricsSecure           bool
	ProbeAddr               string
	PprofAddr               string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	Namespaces              []string
	Shard                   labels.Selector
	Controllers             []string
	Concurrency             int
	ReconcileTimeout        time.Duration
	KubeAPIQPS              float32
	KubeAPIBurst            int
	RegistryQPS             float64
	RegistryCloudIdentity   bool
	ImagePolicies           bool
	ReceiverAddr            string
	Receivers               []receiver.Receiver
	RegistryAllow           registry.AddressPolicy
	GitAllow                registry.AddressPolicy
	GitMaxBytes             int64
	Prometheus              promquery.Options
	Calendars               bool
	Notify                  notifyOptions
	zap                     zap.Options
}

// parseOptions reads the flags. The defaults suit a manager running in the cluster: leader election
// on, metrics on :8080 (plain HTTP) and probes on :8081.
func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("rollgate", flag.ContinueOnError)
	raw := bindFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if *raw.showVersion {
		return options{}, errVersion
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	if err := o.complete(raw); err != nil {
		return options{}, err
	}
	return o, nil
}

// rawFlags are the flags that are read into their option only once parsed (complete).
type rawFlags struct {
	namespaces, shard, controllers, registryAllow, gitAllow, receiversFile string
	kubeAPIQPS                                                             float64
	showVersion                                                            *bool
}

// bindFlags defines the manager's flags on fs, into o or the raw flags it returns.
func bindFlags(fs *flag.FlagSet, o *options) *rawFlags {
	raw := &rawFlags{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080",
		"Address the Prometheus metrics endpoint binds to; \"0\" turns it off.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false,
		"Serve metrics over HTTPS and only to clients that pass a TokenReview and a SubjectAccessReview "+
			"for GET /metrics; otherwise plain HTTP.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "",
		"Address to serve Go's pprof profiles on (/debug/pprof/), e.g. 127.0.0.1:8082; off by default.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true,
		"Elect a leader through a Lease so that only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "rollgate.rollgate.dev",
		"Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Default: the manager's own namespace when in the cluster.")
	fs.StringVar(&raw.namespaces, "namespace", "",
		"Comma-separated namespaces to watch. Default: all namespaces.")
	fs.StringVar(&raw.shard, "watch-label-selector", "",
		"Serve only the RollingUpgradeConfigs and ApplicationVersions whose labels match this selector, e.g. "+
			"sharding.rollgate.dev/key=shard1 (one shard of several managers; give each its own --leader-election-id) "+
			"or !sharding.rollgate.dev/key (the manager for everything not in a shard). Default: all.")
	fs.StringVar(&raw.controllers, "controllers", strings.Join(controller.AllControllers, ","),
		"Comma-separated controllers to run: rollout (the engine), renderer (annotation to workload image), "+
			"applicationversion (ApplicationVersion status), gitwriteback (outcomes written to Git).")
	fs.IntVar(&o.Concurrency, "concurrency", 4,
		"Configs each controller reconciles at once: one slow config (a registry that does not answer) holds one worker, not all.")
	fs.DurationVar(&o.ReconcileTimeout, "reconcile-timeout", time.Minute,
		"Longest a single reconcile may take before its context is cancelled; it is retried with backoff.")
	fs.Float64Var(&raw.kubeAPIQPS, "kube-api-qps", 50,
		"Requests per second the manager may send to the Kubernetes API on average (client-side limit; the API server's "+
			"priority and fairness still applies).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 300,
		"Requests the manager may send to the Kubernetes API at once above --kube-api-qps, e.g. when many configs "+
			"start in one maintenance window.")
	fs.Float64Var(&o.RegistryQPS, "registry-qps", registry.DefaultRequestsPerSecond,
		"Requests per second the manager makes to one registry host (a token bucket with a burst of as many).")
	fs.StringVar(&raw.registryAllow, "registry-allow", "",
		"Comma-separated CIDRs, addresses or host names the manager may list tags from although they are "+
			"loopback, link-local or a cloud metadata service, which are refused by default (e.g. 127.0.0.1 for a "+
			"registry in a sidecar); a host name also lets a proxy resolve it.")
	fs.BoolVar(&o.RegistryCloudIdentity, "registry-cloud-identity", false,
		"Read Amazon ECR, Google Artifact Registry and Container Registry, and Azure Container Registry with the manager's "+
			"own cloud identity (IAM roles for service accounts, EKS Pod Identity, GKE or AKS Workload Identity, or the node's), "+
			"after a workload's pull secrets. "+
			"Every config may then read what that identity may: grant it only the registries the workloads pull from.")
	fs.StringVar(&o.ReceiverAddr, "receiver-addr", "",
		"Address the endpoint of registry push notifications binds to, e.g. :9292 (POST /hook/<receiver>); default: off. "+
			"Only the leader listens. Needs --receivers-file.")
	fs.StringVar(&raw.receiversFile, "receivers-file", "",
		"File of the receivers whose push notifications the endpoint takes (a mounted Secret): a YAML list of name, kind "+
			"(dockerhub, harbor, ghcr, generic) and token.")
	fs.StringVar(&raw.gitAllow, "git-allow", "",
		"Comma-separated CIDRs, addresses or host names the manager may write Git repositories to although they are "+
			"loopback, link-local or a cloud metadata service, which are refused by default (spec.url of a GitWriteBack).")
	fs.Int64Var(&o.GitMaxBytes, "git-max-bytes", gitwrite.DefaultMaxResponseBytes,
		"Bytes the manager reads in one answer of a Git server over HTTP(S), the pack of a shallow clone of one branch, held "+
			"in memory: a larger repository fails its writes with a condition that says so. Up to four repositories are "+
			"written at once: raise the memory limit with it.")
	fs.BoolVar(&o.ImagePolicies, "image-policies", true,
		"Watch Flux's ImagePolicies when the cluster serves them (source imagePolicy). Turn off for a manager whose role may "+
			"not list and watch them: the watch would never sync, and the manager would not start.")
	fs.BoolVar(&o.Calendars, "calendars", true,
		"Apply RolloutCalendars (cluster-scoped): the manager watches them and reads the labels of the namespaces they "+
			"select by. Turn off for a manager without cluster-wide rights (config/namespaced), which cannot read them.")
	fs.StringVar(&o.Prometheus.URL, "prometheus-url", "",
		"Address of the Prometheus HTTP API that spec.analysis queries, e.g. http://prometheus.monitoring:9090. "+
			"Default: none, and a config with an analysis starts no version. Every config's queries go to it: give "+
			"tenants one that holds only what they may see (or a label-enforcing proxy).")
	fs.StringVar(&o.Prometheus.BearerTokenFile, "prometheus-bearer-token-file", "",
		"File holding the bearer token for --prometheus-url, read at each query.")
	fs.StringVar(&o.Prometheus.CAFile, "prometheus-ca-file", "",
		"CA certificates that verify an HTTPS --prometheus-url.")
	fs.DurationVar(&o.Prometheus.Timeout, "prometheus-timeout", 10*time.Second,
		"Longest one analysis query may take; a query that times out counts as an error, not a failure.")
	bindNotifyFlags(fs, &o.Notify)
	o.zap = zap.Options{Development: false}
	o.zap.BindFlags(fs)
	raw.showVersion = fs.Bool("version", false, "Print the version, commit, its date and the Go release, and exit.")
	return raw
}

// complete reads the raw flags into o, and checks every value.
func (o *options) complete(raw *rawFlags) error {
	o.Namespaces = splitList(raw.namespaces)
	var err error
	if o.Shard, err = labels.Parse(raw.shard); err != nil {
		return fmt.Errorf("--watch-label-selector: %w", err)
	}
	o.Controllers = splitList(raw.controllers)
	for _, c := range o.Controllers {
		if !slices.Contains(controller.AllControllers, c) {
			return fmt.Errorf("--controllers: unknown controller %q (known: %s)", c, strings.Join(controller.AllControllers, ", "))
		}
	}
	if o.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1, not %d", o.Concurrency)
	}
	if o.KubeAPIQPS = float32(raw.kubeAPIQPS); o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, not %v and %d", raw.kubeAPIQPS, o.KubeAPIBurst)
	}
	if o.GitMaxBytes < 1<<20 {
		return fmt.Errorf("--git-max-bytes must be at least 1 MiB (1048576), not %d", o.GitMaxBytes)
	}
	if o.RegistryQPS <= 0 {
		return fmt.Errorf("--registry-qps must be positive, not %v", o.RegistryQPS)
	}
	if o.RegistryAllow, err = registry.ParseAllowList(splitList(raw.registryAllow)); err != nil {
		return fmt.Errorf("--registry-allow: %w", err)
	}
	if o.GitAllow, err = registry.ParseAllowList(splitList(raw.gitAllow)); err != nil {
		return fmt.Errorf("--git-allow: %w", err)
	}
	o.GitAllow = o.GitAllow.RefusedWith(errGitAddressRefused)
	if o.ReconcileTimeout <= 0 {
		return fmt.Errorf("--reconcile-timeout must be positive, not %s", o.ReconcileTimeout)
	}
	if o.Prometheus.Timeout <= 0 || o.Prometheus.Timeout >= o.ReconcileTimeout {
		// A query cut off by the reconcile's deadline would record nothing, not even an error.
		return fmt.Errorf("--prometheus-timeout must be positive and below --reconcile-timeout (%s), not %s", o.ReconcileTimeout, o.Prometheus.Timeout)
	}
	if (o.ReceiverAddr == "") != (raw.receiversFile == "") {
		return errors.New("--receiver-addr and --receivers-file go together")
	}
	if raw.receiversFile != "" {
		if o.Receivers, err = receiver.ReadFile(raw.receiversFile); err != nil {
			return fmt.Errorf("--receivers-file: %w", err)
		}
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		return errors.New("--leader-election-id must not be empty when --leader-elect is on")
	}
	return o.Notify.check()
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (o options) logger() logr.Logger {
	return zap.New(zap.UseFlagOptions(&o.zap))
}

// restConfig loads the client configuration: --kubeconfig if given, otherwise the usual chain
// ($KUBECONFIG, in-cluster, ~/.kube/config).
func (o options) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes client configuration (pass --kubeconfig or run in a cluster): %w", err)
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	countAPIRequests(cfg)
	return cfg, nil
}

// errGitAddressRefused is what a GitWriteBack whose host the policy refuses says.
var errGitAddressRefused = errors.New("the Git host's address is not allowed by the manager (--git-allow)")

// registry is how the manager lists tags: within the address policy, paced per host.
func (o options) registry() registry.Remote {
	return registry.Remote{Transport: o.RegistryAllow.Transport(), Limits: &registry.HostLimits{PerSecond: o.RegistryQPS}}
}

// prometheus is the Prometheus of spec.analysis, or nil without --prometheus-url.
func (o options) prometheus() (promquery.Querier, error) {
	if o.Prometheus.URL == "" {
		return nil, nil
	}
	p, err := promquery.New(o.Prometheus)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return p, nil
}
