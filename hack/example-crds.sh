#!/usr/bin/env bash
# Fetches the CRDs of the GitOps tools the examples use (Flux's sources and Kustomization, Argo CD's
# Application) from their Go modules, pinned by the Makefile, into $EXAMPLE_CRDS, so that
# the e2e tests can check examples/flux and examples/argocd against the real schemas. The
# prometheus-operator's CRDs (ServiceMonitor, PrometheusRule, for config/prometheus) are generated
# from its API module with controller-gen, as that project builds them: its main module, which holds
# the YAML, is not on the Go module proxy. So is Flux's ImagePolicy, from the image-reflector-controller
# API module of the version rollgate's go.mod reads it with.
set -euo pipefail
: "${FLUX_SOURCE_VERSION:?run through make}" "${FLUX_KUSTOMIZE_VERSION:?run through make}" "${ARGOCD_VERSION:?run through make}"
: "${PROMETHEUS_OPERATOR_VERSION:?run through make}" "${CONTROLLER_GEN:?run through make}"
: "${EXAMPLE_CRDS:?run through make}" "${CACHE:?run through make}"

imagepolicy=github.com/fluxcd/image-reflector-controller/api
imagepolicy_version=$(go list -m -f '{{.Version}}' "$imagepolicy")
stamp="$EXAMPLE_CRDS/.stamp-3-$FLUX_SOURCE_VERSION-$FLUX_KUSTOMIZE_VERSION-$ARGOCD_VERSION-$PROMETHEUS_OPERATOR_VERSION-$imagepolicy_version"
[ -f "$stamp" ] && exit 0
rm -rf "$EXAMPLE_CRDS" && mkdir -p "$EXAMPLE_CRDS" "$CACHE/src/example-crds"
cd "$CACHE/src/example-crds"
[ -f go.mod ] || go mod init rollgate.local/example-crds >/dev/null 2>&1

# fetch MODULE VERSION FILE...: copy files of a downloaded module.
fetch() {
  local mod=$1 ver=$2; shift 2
  local dir
  dir=$(GOFLAGS=-mod=mod go mod download -json "$mod@$ver" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { echo "error: could not download $mod@$ver from the Go module proxy" >&2; exit 1; }
  for f in "$@"; do cp "$dir/$f" "$EXAMPLE_CRDS/"; done
}
# kustomize-controller, which the e2e tests run, watches every kind of source it can apply.
fetch github.com/fluxcd/source-controller "$FLUX_SOURCE_VERSION" config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml \
  config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml config/crd/bases/source.toolkit.fluxcd.io_buckets.yaml \
  config/crd/bases/source.toolkit.fluxcd.io_externalartifacts.yaml
fetch github.com/fluxcd/kustomize-controller "$FLUX_KUSTOMIZE_VERSION" config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml
fetch github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION" manifests/crds/application-crd.yaml
chmod u+w "$EXAMPLE_CRDS"/*.yaml

monitoring=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
printf 'package crds\n\nimport (\n\t_ "%s/v1"\n\t_ "%s/v1"\n)\n' "$monitoring" "$imagepolicy" > monitoring.go
for m in "$monitoring@$PROMETHEUS_OPERATOR_VERSION" "$imagepolicy@$imagepolicy_version"; do
  GOFLAGS=-mod=mod go get "$m" >/dev/null 2>&1 || { echo "error: could not download $m from the Go module proxy" >&2; exit 1; }
done
GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
"$CONTROLLER_GEN" crd:allowDangerousTypes=true paths="$monitoring/v1" output:crd:dir="$CACHE/src/example-crds/monitoring"
cp monitoring/monitoring.coreos.com_servicemonitors.yaml monitoring/monitoring.coreos.com_prometheusrules.yaml "$EXAMPLE_CRDS/"
"$CONTROLLER_GEN" crd paths="$imagepolicy/v1" output:crd:dir="$CACHE/src/example-crds/image"
cp image/image.toolkit.fluxcd.io_imagepolicies.yaml "$EXAMPLE_CRDS/"
touch "$stamp"
