#!/usr/bin/env bash
# chart-files.sh DIR: the files the Helm chart (charts/rollgate) takes from config/, where they are
# generated or written once: the CRDs, the manager's generated RBAC rules, the alert rules and the
# Grafana dashboard. Run by `make manifests`; `make verify-generated` checks the copies are current.
set -euo pipefail
out=${1:?usage: chart-files.sh DIR}
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out/crds"
cp config/crd/bases/*.yaml "$out/crds/"
# The rules of the generated ClusterRole, which the chart puts in a ClusterRole or in a Role per namespace.
sed -n '/^rules:/,$p' config/rbac/manager/role.yaml >"$out/manager-rules.yaml"
cp config/prometheus/rollgate.rules.yaml config/grafana/rollgate-dashboard.json "$out/"
