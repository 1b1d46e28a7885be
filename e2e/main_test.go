//go:build e2e

// Package e2e tests rollgate on a real local cluster: etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler built from source, with kwok nodes. `make test-e2e` starts that cluster, runs
// these tests and deletes it again, also when they fail.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"github.com/go-logr/logr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// What `make test-e2e` passes in.
var (
	kubeconfig string // ROLLGATE_E2E_KUBECONFIG: the cluster under test
	kubectlBin string // KUBECTL: the kubectl built with the cluster
	managerBin string // ROLLGATE_BIN: the manager binary
	pluginBin  string // ROLLGATE_PLUGIN: the kubectl plugin, kubectl-rollgate
	cosignBin  string // COSIGN: the cosign built for `make image-push`
	helmBin    string // HELM: the helm built for the chart's tests
	// ROLLGATE_PREVIOUS_BIN: the manager of the version an upgrade is tested from (PREVIOUS_VERSION)
	previousBin string
	repoRoot    string
	restConfig  *rest.Config
	k8s         client.Client
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\nrun these tests with `make test-e2e`, which starts the cluster they need\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(file))
	for name, dst := range map[string]*string{
		"ROLLGATE_E2E_KUBECONFIG": &kubeconfig, "KUBECTL": &kubectlBin, "ROLLGATE_BIN": &managerBin, "ROLLGATE_PLUGIN": &pluginBin, "COSIGN": &cosignBin, "HELM": &helmBin, "ROLLGATE_PREVIOUS_BIN": &previousBin,
	} {
		if *dst = os.Getenv(name); *dst == "" {
			return fmt.Errorf("%s is not set", name)
		}
		if _, err := os.Stat(*dst); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	ctrllog.SetLogger(logr.Discard()) // the tests' own clients log nothing; the manager's log is kept
	var err error
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return err
	}
	// One client serves every test, and the tests run in parallel: at client-go's default of 5
	// requests a second their polls queue behind each other for seconds and miss short phases.
	restConfig.QPS, restConfig.Burst = 200, 400
	scheme := clientgoscheme.Scheme
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := imagev1.AddToScheme(scheme); err != nil {
		return err
	}
	k8s, err = client.New(restConfig, client.Options{Scheme: scheme})
	return err
}
