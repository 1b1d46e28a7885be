#!/usr/bin/env bash
# The local Kubernetes cluster: a real etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler started by kwokctl's binary runtime, with kwok nodes. Run through make, which
# pins and builds the binaries and sets the variables below.
#
#   cluster.sh up                  start the cluster, or reuse a healthy one; recreate a broken one
#   cluster.sh down                delete it and every process it started
#   cluster.sh never-ready ENTRY...     pods running any of these images never become Ready: an entry
#                                       IMAGE counts in every namespace, NAMESPACE/IMAGE in that
#                                       namespace only (none: clear the list)
#   cluster.sh ready-delay MS           delay before a pod becomes Ready
#   cluster.sh namespace-delays NS=MS...  the delay of the pods of these namespaces (none listed: clear)
set -euo pipefail

: "${CLUSTER:?CLUSTER is not set (run through make)}"
: "${KUBECONFIG_OUT:?KUBECONFIG_OUT is not set (run through make)}"
: "${KUBE_BIN:?KUBE_BIN is not set (run through make)}"
: "${ETCD_BIN:?ETCD_BIN is not set (run through make)}"
: "${KWOK_BIN:?KWOK_BIN is not set (run through make)}"
: "${CACHE:?CACHE is not set (run through make)}"
NODES=${NODES:-3}
# Pods each node takes (kwok's default is 110); its pod CIDR has room for 254.
NODE_PODS=${NODE_PODS:-110}

here=$(cd "$(dirname "$0")" && pwd)
# The components' settings; bench-scale brings its own.
KWOKCTL_CONFIG=${KWOKCTL_CONFIG:-$here/kwokctl.yaml}
# kwokctl keeps each cluster's files, pids and logs under its work dir; keep them in the cache.
export KWOK_WORKDIR="$CACHE/kwok-workdir"
clusterdir="$KWOK_WORKDIR/clusters/$CLUSTER"

for b in "$KUBE_BIN/kube-apiserver" "$KUBE_BIN/kube-controller-manager" "$KUBE_BIN/kube-scheduler" \
  "$KUBE_BIN/kubectl" "$ETCD_BIN/etcd" "$KWOK_BIN/kwok" "$KWOK_BIN/kwokctl"; do
  [ -x "$b" ] || { echo "error: $b is missing: run 'make control-plane' first" >&2; exit 1; }
done

log() { printf '==> %s\n' "$*" >&2; }
kwokctl() { "$KWOK_BIN/kwokctl" --name "$CLUSTER" "$@"; }
kc() { "$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" "$@"; }

exists() { [ -d "$clusterdir" ]; }

healthy() {
  [ -f "$KUBECONFIG_OUT" ] &&
    kc get --raw /readyz >/dev/null 2>&1 &&
    kc get stages.kwok.x-k8s.io pod-ready >/dev/null 2>&1
}

# kill_strays ends any process still running from this cluster's directory, e.g. after the work
# dir was removed by hand or kwokctl was killed halfway.
kill_strays() {
  local pids
  pids=$(pgrep -f "$clusterdir/" || true)
  [ -z "$pids" ] && return
  log "stopping stray processes of cluster $CLUSTER: $(echo $pids)"
  kill $pids 2>/dev/null || true
  for _ in $(seq 50); do pgrep -f "$clusterdir/" >/dev/null || return 0; sleep 0.1; done
  kill -9 $(pgrep -f "$clusterdir/") 2>/dev/null || true
}

down() {
  if exists; then
    log "deleting cluster $CLUSTER"
    kwokctl delete cluster >/dev/null 2>&1 || true
  fi
  kill_strays
  rm -rf "$clusterdir"
  rm -f "$KUBECONFIG_OUT" "$CACHE/kwokctl-$CLUSTER.log"
}

# The components' settings the cluster was created with, kept beside it: a cluster made with other
# settings is made again.
created_with() { cmp -s "$KWOKCTL_CONFIG" "$clusterdir/rollgate-kwokctl.yaml"; }

up() {
  if exists && healthy && created_with; then
    log "cluster $CLUSTER is running: reusing it"
  else
    if exists; then log "cluster $CLUSTER is not healthy or has other settings: recreating it"; fi
    down
    log "creating cluster $CLUSTER (kube $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION)"
    kwokctl --config "$KWOKCTL_CONFIG" create cluster \
      --runtime binary \
      --etcd-binary "$ETCD_BIN/etcd" \
      --kube-apiserver-binary "$KUBE_BIN/kube-apiserver" \
      --kube-controller-manager-binary "$KUBE_BIN/kube-controller-manager" \
      --kube-scheduler-binary "$KUBE_BIN/kube-scheduler" \
      --kwok-controller-binary "$KWOK_BIN/kwok" \
      --enable-crds Stage \
      --kubeconfig "$KUBECONFIG_OUT" \
      --wait 2m >"$CACHE/kwokctl-$CLUSTER.log" 2>&1 ||
      { cat "$CACHE/kwokctl-$CLUSTER.log" >&2; echo "error: kwokctl could not start cluster $CLUSTER" >&2; down; exit 1; }
    cp "$KWOKCTL_CONFIG" "$clusterdir/rollgate-kwokctl.yaml"
  fi
  # Reset the stages to the shipped defaults: a reused cluster must behave like a new one.
  kc apply --server-side --force-conflicts --field-manager rollgate-cluster -f "$here/stages.yaml" >/dev/null
  kwokctl scale node --replicas "$NODES" --param ".allocatable.pods=$NODE_PODS" >>"$CACHE/kwokctl-$CLUSTER.log" 2>&1 ||
    { cat "$CACHE/kwokctl-$CLUSTER.log" >&2; echo "error: kwokctl could not add nodes" >&2; exit 1; }
  kc wait --for=condition=Ready node --all --timeout=120s >/dev/null
  log "cluster $CLUSTER is up with $NODES nodes; KUBECONFIG=$KUBECONFIG_OUT"
}

# set_list STAGE INDEX VALUES...: the values of one matchExpression, kept non-empty with "none".
set_list() {
  local stage=$1 index=$2; shift 2
  local values
  values=$(printf '%s\n' none "$@" | jq -R . | jq -sc .)
  kc patch stages.kwok.x-k8s.io "$stage" --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/selector/matchExpressions/$index/values\",\"value\":$values}]" >/dev/null
}

never_ready() {
  [ "${1:-}" = none ] && shift
  set_list pod-ready 3 "$@"
  set_list pod-never-ready 2 "$@"
  set_list pod-in-place-ready 3 "$@"
  log "never-ready images: ${*:-none}"
}

ready_delay() {
  local ms=${1:?usage: cluster.sh ready-delay MILLISECONDS}
  [[ $ms =~ ^[0-9]+$ ]] || { echo "error: ready-delay takes milliseconds, got '$ms'" >&2; exit 1; }
  kc patch stages.kwok.x-k8s.io pod-ready --type=merge -p "{\"spec\":{\"delay\":{\"durationMilliseconds\":$ms}}}" >/dev/null
  log "pod ready delay: ${ms}ms"
}

# namespace_delays NS=MS...: the pods of each namespace NS start, and are Ready, MS milliseconds
# after they are scheduled (and after a change in place); every other pod keeps the ready delay.
# The pod-ready and pod-in-place-ready stages look the namespace up in a map, replaced whole.
namespace_delays() {
  local pair map
  for pair in "$@"; do
    [[ $pair =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?=[0-9]+$ ]] ||
      { echo "error: namespace-delays takes NAMESPACE=MILLISECONDS, got '$pair'" >&2; exit 1; }
  done
  map=$(printf '%s\n' "$@" | jq -R 'select(. != "") | split("=") | {(.[0]): (.[1] + "ms")}' | jq -sc 'add // {}')
  local stage
  for stage in pod-ready pod-in-place-ready; do
    kc patch stages.kwok.x-k8s.io "$stage" --type=json \
      -p "$(jq -nc --arg e "$map[.metadata.namespace]" '[{op: "replace", path: "/spec/delay/durationFrom/jq/expression", value: $e}]')" >/dev/null
  done
  log "namespace ready delays: ${*:-none}"
}

# restart COMPONENT SECONDS: SIGKILL one process of the control plane (etcd, kube-apiserver, ...),
# leave it down SECONDS, then start it again with its own command line, as a supervisor would.
restart() {
  local name=${1:?usage: cluster.sh restart COMPONENT SECONDS} secs=${2:?usage: cluster.sh restart COMPONENT SECONDS}
  local pidfile="$clusterdir/pids/$name.pid" pid cwd
  pid=$(cat "$pidfile" 2>/dev/null) && [ -r "/proc/$pid/cmdline" ] ||
    { echo "error: cluster $CLUSTER has no running $name" >&2; exit 1; }
  local -a cmd
  mapfile -d '' -t cmd <"/proc/$pid/cmdline"
  # The pid file may be stale and its pid another process's by now.
  [[ ${#cmd[@]} -gt 0 && ${cmd[0]} == "$clusterdir/"*"/$name" ]] ||
    { echo "error: process $pid is not cluster $CLUSTER's $name" >&2; exit 1; }
  cwd=$(readlink "/proc/$pid/cwd")
  kill -9 "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$pid" 2>/dev/null || { echo "error: $name ($pid) did not exit" >&2; exit 1; }
  log "$name killed; starting it again in ${secs}s"
  sleep "$secs"
  (cd "$cwd" && exec setsid "${cmd[@]}" >>"$clusterdir/logs/$name.log" 2>&1 </dev/null) &
  echo $! >"$pidfile"
  log "$name started again"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  never-ready) shift; never_ready "$@" ;;
  ready-delay) shift; ready_delay "$@" ;;
  namespace-delays) shift; namespace_delays "$@" ;;
  restart) shift; restart "$@" ;;
  *) echo "usage: $0 up|down|never-ready ENTRY...|ready-delay MS|namespace-delays NS=MS...|restart COMPONENT SECONDS" >&2; exit 2 ;;
esac
