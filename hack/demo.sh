#!/usr/bin/env bash
# `make demo`: the main job of rollgate, narrated, on a local control plane built from source:
# a version held for the maintenance window, the window opens, rollout, a bad version, rollback,
# the circuit breaker, a human reset, and a StatefulSet upgraded in place. It starts its own cluster and manager and removes both at the
# end (KEEP_CLUSTER=1 keeps the cluster, with its kubeconfig in bin/).
set -euo pipefail
cd "$(dirname "$0")/.."

export CLUSTER=rollgate-demo
export KUBECONFIG_OUT="$PWD/bin/rollgate-demo.kubeconfig"
: "${KUBECTL:?run through make demo}"
NS=shop

bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'
[ -t 1 ] || { bold='' dim='' off=''; }
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
note() { printf '   %s\n' "$*"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$off"; "$@"; }
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" "$@"; }
show() { run kubectl -n "$NS" get ruc web; }
# events [N] [CONFIG] [MORE-SELECTORS]: the last N events of a config (web).
events() {
  sel="involvedObject.name=${2:-web},involvedObject.kind=RollingUpgradeConfig${3:-}"
  printf '%s$ kubectl -n %s get events --field-selector %s%s\n' "$dim" "$NS" "$sel" "$off"
  kubectl -n "$NS" get events --field-selector "$sel" \
    --sort-by=.metadata.creationTimestamp -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message | tail -n "${1:-4}"
}
# wait_phase PHASE [TIMEOUT]: wait until the config reaches a phase.
wait_phase() {
  printf '%s   (waiting for phase %s)%s\n' "$dim" "$1" "$off"
  kubectl -n "$NS" wait ruc/web --for=jsonpath='{.status.phase}'="$1" --timeout="${2:-120s}" >/dev/null
}
# announce VERSION [APPVERSION]: the ApplicationVersion (web) announces VERSION.
announce() { run kubectl -n "$NS" patch appver "${2:-web}" --type=merge -p "{\"spec\":{\"version\":\"$1\"}}"; }

manager_pid=
cleanup() {
  status=$?
  if [ -n "$manager_pid" ]; then kill "$manager_pid" 2>/dev/null; wait "$manager_pid" 2>/dev/null || true; fi
  if [ $status -ne 0 ] && [ -f bin/rollgate-demo-manager.log ]; then
    echo "The demo failed; the last lines of the manager's log:" >&2
    tail -n 20 bin/rollgate-demo-manager.log >&2
  fi
  if [ "${KEEP_CLUSTER:-}" = 1 ]; then
    say "The cluster keeps running: export KUBECONFIG=$KUBECONFIG_OUT; 'make cluster-down CLUSTER=$CLUSTER' removes it"
  else
    hack/cluster/cluster.sh down
  fi
}
trap cleanup EXIT

say "1. A local Kubernetes: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from source, kwok nodes"
hack/cluster/cluster.sh up
run kubectl get nodes
run kubectl apply --server-side -k config/crd >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/rollingupgradeconfigs.rollgate.dev crd/applicationversions.rollgate.dev crd/gitwritebacks.rollgate.dev >/dev/null
note "Versions 1.2.0 and 1.2.1 of ghcr.io/acme/web are broken: kwok never makes their pods Ready."
hack/cluster/cluster.sh never-ready ghcr.io/acme/web:1.2.0 ghcr.io/acme/web:1.2.1

say "2. The manager, watching namespace $NS"
bin/rollgate --kubeconfig "$KUBECONFIG_OUT" --leader-elect=false --namespace "$NS" \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  >bin/rollgate-demo-manager.log 2>&1 &
manager_pid=$!
for _ in $(seq 100); do curl -fs http://127.0.0.1:18081/readyz >/dev/null 2>&1 && break; sleep 0.2; done
run curl -fsS -w '\n' http://127.0.0.1:18081/readyz

# The window opens at the next minute boundary at least 25 s away, in Europe/Berlin.
opens=$(( ( $(date +%s) + 25 + 59 ) / 60 * 60 ))
schedule="$(TZ=Europe/Berlin date -d "@$opens" '+%-M %-H') * * *"
say "3. A shop: Deployment web (1.0.0, with a log-shipper sidecar), its ApplicationVersion, and its RollingUpgradeConfig"
run kubectl create namespace "$NS" >/dev/null
cat >bin/rollgate-demo.yaml <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  progressDeadlineSeconds: 15        # a stuck rollout reports ProgressDeadlineExceeded after 15 s
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "ghcr.io/acme/web:1.0.0"}
      - {name: log-shipper, image: "ghcr.io/acme/log-shipper:2.1.0"}
---
apiVersion: rollgate.dev/v1alpha1
kind: ApplicationVersion             # the file Renovate bumps in Git; Flux or Argo CD sync it
metadata: {name: web}
spec: {image: ghcr.io/acme/web, version: 1.0.0}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: web}
spec:
  targetRef: {kind: Deployment, name: web}
  container: web
  image: ghcr.io/acme/web
  versionConstraint: ">=1.0.0, <2.0.0"
  sources: [{applicationVersion: {name: web}}]
  maintenanceWindow: {schedule: "$schedule", duration: 1m, timeZone: Europe/Berlin}
  healthTimeout: 2m
  maxRollbacks: 2
EOF
run cat bin/rollgate-demo.yaml
run kubectl -n "$NS" apply -f bin/rollgate-demo.yaml
kubectl -n "$NS" rollout status deployment/web --timeout=60s >/dev/null
kubectl -n "$NS" wait ruc/web --for=jsonpath='{.status.currentVersion}'=1.0.0 --timeout=60s >/dev/null
show

say "4. Renovate's pull request for 1.1.0 is merged: the ApplicationVersion says 1.1.0"
announce 1.1.0
wait_phase Pending
note "Outside the window the version is held; the next window is in status and in the event."
show
events 2

say "5. The window opens: 1.1.0 is applied (the target-image annotation), rendered, and health-checked"
wait_phase Completed 150s
show
run kubectl -n "$NS" get deployment web -o 'jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}{"\n"}{end}'
note "Only the web container moved; the sidecar is untouched."
events 3

say "6. For the rest of the demo the window is removed, so each step starts at once"
run kubectl -n "$NS" patch ruc web --type=json -p '[{"op":"remove","path":"/spec/maintenanceWindow"}]'

say "7. 1.2.0 is announced, but its pods never become Ready"
announce 1.2.0
wait_phase InProgress
show
note "The Deployment exceeds its progress deadline; rollgate rolls back without waiting for the 2m health timeout."
kubectl -n "$NS" wait ruc/web --for=jsonpath='{.status.rollbackCount}'=1 --timeout=120s >/dev/null
wait_phase Idle
show
run kubectl -n "$NS" get ruc web -o 'jsonpath=failed versions: {.status.failedVersions}{"\n"}'
events 3

say "8. 1.2.1 is broken too: the second rollback in a row opens the circuit breaker (maxRollbacks: 2)"
announce 1.2.1
wait_phase Failed 150s
show
events 3

say "9. A good 1.3.0 arrives, but the circuit is open: it is not applied"
announce 1.3.0
kubectl -n "$NS" wait ruc/web --for=jsonpath='{.status.availableVersion}'=1.3.0 --timeout=60s >/dev/null
show
events 1

say "10. A human looked at it and resets the circuit with an annotation: 1.3.0 goes out"
run kubectl -n "$NS" annotate ruc web rollgate.dev/reset-circuit="checked-$(date +%s)"
wait_phase Completed 150s
show
run kubectl -n "$NS" get ruc web -o 'jsonpath={range .status.versionHistory[*]}{.version}{"\t"}{.status}{"\t"}{.appliedAt}{"\n"}{end}'
events 3

say "11. A StatefulSet upgraded in place: each pod keeps its UID, node and IP; only its container restarts"
cat >bin/rollgate-demo-db.yaml <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  podManagementPolicy: Parallel
  updateStrategy: {type: OnDelete}    # its controller leaves the pods to rollgate
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      readinessGates:                  # rollgate takes a pod out of its Service through it
      - {conditionType: rollgate.dev/in-place-ready}
      containers:
      - {name: db, image: "ghcr.io/acme/db:1.0.0"}
---
apiVersion: rollgate.dev/v1alpha1
kind: ApplicationVersion
metadata: {name: db}
spec: {image: ghcr.io/acme/db, version: 1.0.0}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: db}
spec:
  targetRef: {kind: StatefulSet, name: db}
  image: ghcr.io/acme/db
  versionConstraint: ">=1.0.0, <2.0.0"
  sources: [{applicationVersion: {name: db}}]
  healthTimeout: 2m
  strategy:
    type: InPlace
    inPlace: {maxUnavailable: 1, drainGracePeriod: 2s, podReadyTimeout: 30s}
EOF
run cat bin/rollgate-demo-db.yaml
run kubectl -n "$NS" apply -f bin/rollgate-demo-db.yaml
kubectl -n "$NS" wait ruc/db --for=jsonpath='{.status.currentVersion}'=1.0.0 --timeout=90s >/dev/null
db_pods() {
  run kubectl -n "$NS" get pods -l app=db -o \
    'custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName,IP:.status.podIP,IMAGE:.spec.containers[0].image,RESTARTS:.status.containerStatuses[0].restartCount'
}
db_pods
announce 1.1.0 db
kubectl -n "$NS" wait ruc/db --for=jsonpath='{.status.currentVersion}'=1.1.0 --timeout=120s >/dev/null
note "db-2, db-1, db-0 moved in that order, one at a time, each out of its Service first: the same pods, restarted once."
db_pods
run kubectl -n "$NS" get ruc db -o 'jsonpath={range .status.inPlace.pods[*]}{.name} {.state} {.since}{"\n"}{end}'
events 3 db ,reason=PodUpgraded

say "12. What Prometheus scrapes from the manager (the Grafana dashboard and alerts are in config/grafana and config/prometheus)"
printf '%s$ curl -s http://127.0.0.1:18080/metrics | grep -E "^(rolling|pod)_upgrade_[a-z_]+(_total|_count)?[{]"%s\n' "$dim" "$off"
curl -s http://127.0.0.1:18080/metrics | grep -E '^(rolling|pod)_upgrade_[a-z_]+(_total|_count)?[{]' | grep -v '_bucket' || true

say "Done: held, applied in the window, rolled back twice, circuit opened, reset by a human, 1.3.0 running; db upgraded in place"
