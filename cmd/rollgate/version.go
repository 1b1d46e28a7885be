package main

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rollgate/rollgate/internal/buildinfo"
)

// errVersion: --version was given; the version is printed instead of running the manager.
var errVersion = errors.New("version asked for")

// buildInfo is 1, labelled with the build that runs: which version a fleet runs, in one query.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "rollgate_build_info",
	Help: "1, labelled with the version, commit, commit date and Go release of the running manager.",
}, []string{"version", "commit", "date", "goversion"})

func init() {
	i := buildinfo.Get()
	buildInfo.WithLabelValues(i.Version, i.Commit, i.Date, i.Go).Set(1)
	metrics.Registry.MustRegister(buildInfo)
}
