// Command rollgate is the rollgate manager: it runs the controllers that roll Deployments and
// StatefulSets forward to new image versions, and serves health probes and Prometheus metrics.
// `rollgate renovate import` feeds a Renovate report into ApplicationVersions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	// Maintenance windows name IANA time zones; embed the database so that a minimal image works.
	_ "time/tzdata"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "renovate" {
		err = runRenovate(ctx, os.Args[2:], os.Stdout)
	} else {
		err = run(ctx, os.Args[1:])
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the flag package printed the usage
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
	ctrl.Log.WithName("setup").Info("starting manager",
		"metrics", opts.MetricsAddr, "probes", opts.ProbeAddr,
		"leaderElection", opts.LeaderElect, "namespaces", opts.Namespaces, "controllers", opts.Controllers)
	return mgr.Start(ctx)
}
