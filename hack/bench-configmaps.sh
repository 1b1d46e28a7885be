#!/usr/bin/env bash
# `make bench-configmaps`: the manager's memory with and without 5,000 unlabelled 10 KiB ConfigMaps
# in the cluster. The manager caches only ConfigMaps labelled rollgate.dev/version-source, so the
# two figures should be close. Prints both resident set sizes (VmRSS of the manager process,
# 20 s after it started, with ten RollingUpgradeConfigs to reconcile).
set -euo pipefail
cd "$(dirname "$0")/.."
export CLUSTER=rollgate-bench KUBECONFIG_OUT="$PWD/bin/rollgate-bench.kubeconfig"
: "${KUBECTL:?run through make bench-configmaps}"
COUNT=${COUNT:-5000}
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" "$@"; }
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; hack/cluster/cluster.sh down' EXIT

hack/cluster/cluster.sh up
kubectl apply --server-side -k config/crd >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/rollingupgradeconfigs.rollgate.dev crd/gitwritebacks.rollgate.dev >/dev/null
kubectl create namespace bench >/dev/null
for i in $(seq 10); do
  kubectl -n bench create deployment "app$i" --image="bench.local/app$i:1.0.0" >/dev/null
  kubectl -n bench apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: versions$i, labels: {rollgate.dev/version-source: "true"}}
data: {app: "1.0.0"}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: app$i}
spec:
  targetRef: {kind: Deployment, name: app$i}
  image: bench.local/app$i
  sources: [{configMap: {name: versions$i, key: app}}]
YAML
done

rss() {
  bin/rollgate --kubeconfig "$KUBECONFIG_OUT" --leader-elect=false --metrics-bind-address 0 \
    --health-probe-bind-address 127.0.0.1:0 >/dev/null 2>&1 &
  pid=$!
  sleep 20
  awk '/^VmRSS/ {printf "%.1f MiB", $2/1024}' "/proc/$pid/status"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

without=$(rss)
echo "creating $COUNT unlabelled ConfigMaps of 10 KiB ..." >&2
payload=$(head -c 7680 /dev/urandom | base64 -w0)   # 10 KiB of text
dir=$(mktemp -d)
for chunk in $(seq 0 $(( (COUNT - 1) / 250 ))); do
  f="$dir/cm-$chunk.yaml"
  for j in $(seq 1 250); do
    n=$(( chunk * 250 + j )); [ "$n" -le "$COUNT" ] || break
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big-%d, namespace: bench}\ndata: {blob: %s}\n---\n' "$n" "$payload"
  done >"$f"
  kubectl create -f "$f" >/dev/null
done
rm -rf "$dir"
stored=$(kubectl -n bench get configmaps -l '!rollgate.dev/version-source' -o name | wc -l)
with=$(rss)
echo "manager RSS without the ConfigMaps: $without"
echo "manager RSS with $stored unlabelled 10 KiB ConfigMaps in the cluster: $with"
