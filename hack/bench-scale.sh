#!/usr/bin/env bash
# `make bench-scale N=1000`: one version announced to N configs on a cluster of its own, timed
# against a bare client on the same cluster; see hack/benchscale for what it prints. Settings:
# UNRELATED (unrelated ConfigMaps and Deployments, default 0), IDLE (how long the settled manager is
# watched, default 5m), READY_DELAY (ms before a pod is Ready, default 2000), MANAGER (the binary,
# default bin/rollgate), MANAGER_ARGS (its extra flags) and MANAGER_ENV (its extra environment,
# NAME=value space-separated; default the GOMEMLIMIT of config/manager, so that the manager runs as
# installed; MANAGER_ENV= runs it without).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBECTL:?run through make bench-scale}"
N=${N:-1000}
export CLUSTER=rollgate-scale KUBECONFIG_OUT="$PWD/bin/rollgate-scale.kubeconfig"
export KWOKCTL_CONFIG="$PWD/hack/cluster/kwokctl-scale.yaml"
# Each Deployment has one replica and surges to two during its rollout: 200 pods a node, so that
# each node's /24 pod CIDR keeps room.
export NODE_PODS=200 NODES=$(( (2 * N + 199) / 200 + 1 ))
trap 'hack/cluster/cluster.sh down' EXIT
hack/cluster/cluster.sh down
hack/cluster/cluster.sh up
# Pods start, and are Ready, READY_DELAY ms after they are scheduled, as a real container's readiness probe makes
# them: health checks then span several workload events, as they do in a real cluster.
hack/cluster/cluster.sh ready-delay "${READY_DELAY:-2000}"
"$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" apply --server-side -k config/crd >/dev/null
"$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" wait --for=condition=Established --timeout=60s crd/rollingupgradeconfigs.rollgate.dev crd/gitwritebacks.rollgate.dev >/dev/null
# The manager alone gets MANAGER_ENV: exported, a GOMEMLIMIT would also bind the control plane.
installed_env=$(sed -n '/name: GOMEMLIMIT/{n;s/ *value: */GOMEMLIMIT=/p}' config/manager/manager.yaml)
go run ./hack/benchscale -kubeconfig "$KUBECONFIG_OUT" -n "$N" -unrelated "${UNRELATED:-0}" -idle "${IDLE:-5m}" \
  -manager "${MANAGER:-bin/rollgate}" -manager-args "${MANAGER_ARGS:-}" \
  -manager-env "${MANAGER_ENV-$installed_env}" -pids "$CACHE/kwok-workdir/clusters/$CLUSTER/pids"
