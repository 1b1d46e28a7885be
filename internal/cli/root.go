// Package cli is kubectl rollgate: what a person on call asks of rollgate and does to it, as one
// command each. Every act is an annotation or a spec field a namespace editor may write, so that
// the plugin needs no permission kubectl annotate would not need.
package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// FieldManager owns what the plugin writes.
const FieldManager = "kubectl-rollgate"

// app is what every command works with: the API server, the namespace, where to write, the clock
// and who the user is.
type app struct {
	c         client.Client
	namespace string
	all       bool // --all-namespaces
	offline   bool // lint --offline
	out       io.Writer
	now       func() time.Time
	who       func(ctx context.Context) string
	// settle is how long an act waits for the manager to see an annotation removed before it is
	// set again to the same value (reject, retry).
	settle time.Duration
}

// NewCommand is kubectl rollgate with its subcommands. It connects to the cluster as kubectl
// does: --kubeconfig, --context, -n, --as and the other kubectl flags.
func NewCommand(out io.Writer) *cobra.Command {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	a := &app{out: out, now: time.Now, settle: 30 * time.Second}
	root := a.root()
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.HasParent() || cmd.Parent().Name() == "completion" || cmd.Name() == "help" || cmd.Name() == "version" ||
			(cmd.Name() == "lint" && a.offline) {
			return nil // nothing to ask the cluster
		}
		return a.connect(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides))
	}
	fs := root.PersistentFlags()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "the kubeconfig file to use")
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	return root
}

// root is the command tree over a.
func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-rollgate",
		Short:         "Read and steer rollgate's RollingUpgradeConfigs",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl rollgate"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(a.getCommand(), a.describeCommand(), a.whyCommand(), a.historyCommand(), a.approveCommand(), a.rejectCommand(), a.retryCommand(),
		a.resetCommand(), a.suspendCommand(true), a.suspendCommand(false), a.lintCommand(), versionCommand(a.out))
	return root
}

// connect makes the client of the kubeconfig and flags, and learns the namespace.
func (a *app) connect(cfg clientcmd.ClientConfig) error {
	rest, err := cfg.ClientConfig()
	if err != nil {
		return err
	}
	if a.namespace, _, err = cfg.Namespace(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if a.c, err = client.New(rest, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	a.who = a.selfSubject
	return nil
}

// selfSubject is the user the API server takes this client for ("" when it cannot say): what
// approved-by, rejected-by and retried-by name.
func (a *app) selfSubject(ctx context.Context) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := a.c.Create(ctx, review); err != nil {
		return ""
	}
	return review.Status.UserInfo.Username
}

// config reads one config of the namespace.
func (a *app) config(ctx context.Context, name string) (*v1alpha1.RollingUpgradeConfig, error) {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := a.c.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: name}, &ruc); err != nil {
		return nil, err
	}
	return &ruc, nil
}

func (a *app) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(a.out, format, args...)
}
