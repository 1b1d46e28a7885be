#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy, pinned by the Makefile:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes)
#   etcd                                                              (go.etcd.io/etcd/server/v3)
#   kwok, kwokctl                                                     (sigs.k8s.io/kwok)
#   kustomize-controller, for the e2e tests (a GitOps tool applying Git) (github.com/fluxcd/kustomize-controller)
#
# Each component is built in a throwaway module under $CACHE/src and installed into
# $CACHE/<component>-<version>/. A stamp file makes a rebuild happen only when a pinned version
# changes. k8s.io/kubernetes is not meant to be used as a dependency: its go.mod replaces every
# staging module with ./staging/src/..., so the throwaway module replaces each of them with the
# published module of the same name at the matching v0.X.Y.
set -euo pipefail

: "${KUBE_VERSION:?KUBE_VERSION is not set (run through make)}"
: "${ETCD_VERSION:?ETCD_VERSION is not set (run through make)}"
: "${KWOK_VERSION:?KWOK_VERSION is not set (run through make)}"
: "${CACHE:?CACHE is not set (run through make)}"

command -v go >/dev/null || { echo "error: go is not on PATH; install Go 1.26 or newer" >&2; exit 1; }

mkdir -p "$CACHE/src"
CACHE=$(cd "$CACHE" && pwd)
# The control plane is test infrastructure, cached by version: it is built with the installed Go,
# with which these versions are known to build, not with the toolchain the Makefile picks for rollgate.
export GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local

log() { printf '==> %s\n' "$*" >&2; }

# staged MODULE VERSION NAME... : true when every NAME is already built for VERSION.
built() {
  local dir=$1; shift
  [ -f "$dir/.stamp" ] || return 1
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# throwaway DIR MODULE VERSION: a module that requires MODULE@VERSION.
throwaway() {
  local dir=$1 mod=$2 ver=$3
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && go mod init rollgate.local/build >/dev/null 2>&1 && go mod edit -require="$mod@$ver")
}

build_kube() {
  kubernetes_commands "$CACHE/kubernetes-$KUBE_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubectl
}

# The kube-apiserver of the oldest Kubernetes rollgate supports, for the integration suite.
build_oldest() {
  : "${KUBE_OLDEST_VERSION:?KUBE_OLDEST_VERSION is not set (run through make)}"
  KUBE_VERSION=$KUBE_OLDEST_VERSION kubernetes_commands "$CACHE/kube-apiserver-$KUBE_OLDEST_VERSION" kube-apiserver
}

# kubernetes_commands OUT CMD...: the commands of k8s.io/kubernetes $KUBE_VERSION, built into OUT.
kubernetes_commands() {
  local out=$1; shift
  if built "$out" "$@"; then
    log "kubernetes $KUBE_VERSION ($*): cached in $out"; return
  fi
  log "kubernetes $KUBE_VERSION ($*): building (cold: ~5 min of downloads and ~5 min of compiling)"
  local src="$CACHE/src/kubernetes-$KUBE_VERSION" staging="v0.${KUBE_VERSION#v1.}"
  throwaway "$src" k8s.io/kubernetes "$KUBE_VERSION"
  local gomod
  gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -n "$gomod" ] || { echo "error: could not download k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
  # Every "k8s.io/x => ./staging/src/k8s.io/x" of kubernetes' go.mod becomes "k8s.io/x => k8s.io/x v0.N.M".
  local replaces
  replaces=$(sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/.*#\1#p' "$gomod")
  [ -n "$replaces" ] || { echo "error: no staging replaces found in $gomod" >&2; exit 1; }
  local args=()
  for m in $replaces; do args+=("-replace=$m=$m@$staging"); done
  (cd "$src" && go mod edit "${args[@]}")
  local major=${KUBE_VERSION#v}; major=${major%%.*}
  local minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  local pkgs=()
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$src" && { printf '//go:build tools\n\npackage build\n\nimport (\n'; printf '\t_ "%s"\n' "${pkgs[@]}"; printf ')\n'; } > tools.go
  go mod tidy -e 2>&1 | grep -v "^go: downloading" >&2 || true
  mkdir -p "$out"
  CGO_ENABLED=0 go build -tags tools -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
  echo "$KUBE_VERSION" > "$out/.stamp"
}

build_etcd() {
  local out="$CACHE/etcd-$ETCD_VERSION"
  if built "$out" etcd; then log "etcd $ETCD_VERSION: cached in $out"; return; fi
  log "etcd $ETCD_VERSION: building (~1 min)"
  local src="$CACHE/src/etcd"
  throwaway "$src" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  (cd "$src" && printf '//go:build tools\n\npackage build\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go &&
    go mod tidy -e 2>&1 | grep -v "^go: downloading" >&2 || true &&
    mkdir -p "$out" &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
  echo "$ETCD_VERSION" > "$out/.stamp"
}

build_kwok() {
  local out="$CACHE/kwok-$KWOK_VERSION"
  if built "$out" kwok kwokctl; then log "kwok $KWOK_VERSION: cached in $out"; return; fi
  log "kwok $KWOK_VERSION: building (~2 min)"
  local src="$CACHE/src/kwok"
  throwaway "$src" sigs.k8s.io/kwok "$KWOK_VERSION"
  (cd "$src" && printf '//go:build tools\n\npackage build\n\nimport (\n\t_ "sigs.k8s.io/kwok/cmd/kwok"\n\t_ "sigs.k8s.io/kwok/cmd/kwokctl"\n)\n' > tools.go &&
    go mod tidy -e 2>&1 | grep -v "^go: downloading" >&2 || true &&
    mkdir -p "$out" &&
    CGO_ENABLED=0 go build -tags tools -trimpath \
      -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
      -o "$out/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
  echo "$KWOK_VERSION" > "$out/.stamp"
}

# Flux's kustomize-controller, for the e2e tests: the GitOps tool that applies what rollgate writes
# to Git. Its module builds with a few of its dependencies pinned to versions that still build
# together (the Makefile's FLUX_KUSTOMIZE_VERSION is known to build so).
build_flux() {
  : "${FLUX_KUSTOMIZE_VERSION:?FLUX_KUSTOMIZE_VERSION is not set (run through make)}"
  local out="$CACHE/kustomize-controller-$FLUX_KUSTOMIZE_VERSION"
  if built "$out" kustomize-controller; then log "kustomize-controller $FLUX_KUSTOMIZE_VERSION: cached in $out"; return; fi
  log "kustomize-controller $FLUX_KUSTOMIZE_VERSION: building (cold: ~10 min: it brings the clients of every cloud KMS)"
  local src="$CACHE/src/kustomize-controller"
  throwaway "$src" github.com/fluxcd/kustomize-controller "$FLUX_KUSTOMIZE_VERSION"
  (cd "$src" && go mod edit \
      -replace=github.com/opencontainers/go-digest=github.com/opencontainers/go-digest@v1.0.1-0.20220411205349-bde1400a84be \
      -replace=gopkg.in/yaml.v3=gopkg.in/yaml.v3@v3.0.1 \
      -replace=sigs.k8s.io/kustomize/api=sigs.k8s.io/kustomize/api@v0.21.1 \
      -replace=sigs.k8s.io/kustomize/kyaml=sigs.k8s.io/kustomize/kyaml@v0.21.1 &&
    printf '//go:build tools\n\npackage build\n\nimport _ "github.com/fluxcd/kustomize-controller"\n' > tools.go &&
    go mod tidy -e 2>&1 | grep -v "^go: downloading" >&2 || true &&
    mkdir -p "$out" &&
    CGO_ENABLED=0 go build -tags tools -trimpath -ldflags "-s -w" -o "$out/kustomize-controller" github.com/fluxcd/kustomize-controller)
  echo "$FLUX_KUSTOMIZE_VERSION" > "$out/.stamp"
}

for c in "${@:-etcd kube kwok}"; do
  for x in $c; do "build_$x"; done
done
