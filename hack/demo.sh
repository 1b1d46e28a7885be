#!/usr/bin/env bash
# `make demo`: a narrated tour on a local control plane built from source. It starts its own
# cluster and deletes it at the end (KEEP_CLUSTER=1 keeps it, with its kubeconfig in bin/).
set -euo pipefail
cd "$(dirname "$0")/.."

export CLUSTER=rollgate-demo
export KUBECONFIG_OUT="$PWD/bin/rollgate-demo.kubeconfig"
: "${KUBECTL:?run through make demo}"

bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'
[ -t 1 ] || { bold='' dim='' off=''; }
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$off"; "$@"; }
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" "$@"; }

manager_pid=
cleanup() {
  [ -n "$manager_pid" ] && kill "$manager_pid" 2>/dev/null && wait "$manager_pid" 2>/dev/null
  if [ "${KEEP_CLUSTER:-}" = 1 ]; then
    say "The cluster keeps running: export KUBECONFIG=$KUBECONFIG_OUT; 'make cluster-down CLUSTER=$CLUSTER' removes it"
  else
    hack/cluster/cluster.sh down
  fi
}
trap cleanup EXIT

say "A local Kubernetes: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from source, with kwok nodes"
hack/cluster/cluster.sh up
run kubectl get nodes

say "rollgate's API: the RollingUpgradeConfig and ApplicationVersion CRDs"
run kubectl apply --server-side -k config/crd
run kubectl wait --for=condition=Established --timeout=60s crd/rollingupgradeconfigs.rollgate.dev crd/applicationversions.rollgate.dev

say "A workload to steer: Deployment 'web' running ghcr.io/acme/web:1.3.0 on kwok nodes"
run kubectl create namespace shop
run kubectl -n shop create deployment web --image=ghcr.io/acme/web:1.3.0 --replicas=3
run kubectl -n shop rollout status deployment/web --timeout=60s

say "Its RollingUpgradeConfig, the ApplicationVersion Renovate bumps, and a labelled ConfigMap signal"
run cat config/samples/rollgate_v1alpha1_rollingupgradeconfig.yaml
run kubectl -n shop apply -k config/samples

say "The API server rejects a bad spec at admission, with a message that says what to write"
bad='{"apiVersion":"rollgate.dev/v1alpha1","kind":"RollingUpgradeConfig","metadata":{"name":"bad"},
"spec":{"targetRef":{"kind":"Deployment","name":"web"},"image":"ghcr.io/acme/web:1.0","healthTimeout":"5s",
"maintenanceWindow":{"schedule":"0 3 * * *"}}}'
printf '%s$ kubectl -n shop apply -f - <<< %s%s\n' "$dim" "'$bad'" "$off"
kubectl -n shop apply -f - <<<"$bad" 2>&1 | tr ';' '\n' | sed 's/^ */    /' || true

say "The manager: health probes and Prometheus metrics on loopback"
bin/rollgate --kubeconfig "$KUBECONFIG_OUT" --leader-elect=false \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  >bin/rollgate-demo-manager.log 2>&1 &
manager_pid=$!
for _ in $(seq 100); do curl -fs http://127.0.0.1:18081/readyz >/dev/null 2>&1 && break; sleep 0.2; done
run curl -fsS -w '\n' http://127.0.0.1:18081/healthz
run curl -fsS -w '\n' http://127.0.0.1:18081/readyz
printf '%s$ curl -s http://127.0.0.1:18080/metrics | grep -E "^(go_goroutines|process_resident_memory_bytes) "%s\n' "$dim" "$off"
curl -fsS http://127.0.0.1:18080/metrics | grep -E '^(go_goroutines|process_resident_memory_bytes) '

say "What kubectl shows"
run kubectl -n shop get ruc,appver
run kubectl -n shop get rollgate -o wide
