// Command rollgate is the rollgate manager: it runs the controllers that roll Deployments and
// StatefulSets forward to new image versions, and serves health probes and Prometheus metrics.
// `rollgate renovate import` feeds a Renovate report into ApplicationVersions; `rollgate version`
// (or --version) says which build it is.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	// Maintenance windows name IANA time zones; embed the database so that a minimal image works.
	_ "time/tzdata"

	// Registries, Git hosts and Prometheus are reached over TLS: Mozilla's roots, used when the
	// system has none (the image is built on an empty base).
	_ "golang.org/x/crypto/x509roots/fallback"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rollgate/rollgate/internal/buildinfo"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "renovate":
		err = runRenovate(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) == 2 && os.Args[1] == "version":
		err = errVersion
	default:
		err = run(ctx, os.Args[1:])
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return // the flag package printed the usage
	case errors.Is(err, errVersion):
		fmt.Println(buildinfo.Get())
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rollgate:", err)
		os.Exit(1)
	}
}

// run parses the command line, builds the manager and runs it until ctx is done.
func run(ctx context.Context, args []string) error {
	opts, err := parseOptions(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(opts.logger())

	cfg, err := opts.restConfig()
	if err != nil {
		return err
	}
	mgr, err := newManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting manager", "version", buildinfo.Get().String(),
		"metrics", opts.MetricsAddr, "probes", opts.ProbeAddr,
		"leaderElection", opts.LeaderElect, "namespaces", opts.Namespaces, "controllers", opts.Controllers)
	return mgr.Start(ctx)
}
