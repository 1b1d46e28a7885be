#!/usr/bin/env bash
# release.sh: the artefacts of a release in $DIST, from the image and SBOMs `make image` wrote into
# $IMAGE_DIR (run through `make release VERSION=v0.1.0`):
#   install.yaml, install-namespaced.yaml  CRDs, RBAC and the manager, its image pinned by digest
#   rollgate-X.Y.Z.tgz                     the Helm chart, its image pinned by digest
#   rollgate-image.oci.tar                 the image (an OCI layout: every platform), for air gaps
#   rollgate-sbom-OS-ARCH.cdx.json         each platform's CycloneDX SBOM: the modules of its binary
#   cosign.pub                             with COSIGN_KEY: the public key that verifies the image
#   checksums.txt.sig                      with COSIGN_KEY: the signature of checksums.txt
#   kubectl-rollgate-OS-ARCH.tar.gz        the kubectl plugin of each of PLUGIN_PLATFORMS, with the LICENSE
#   rollgate.krew.yaml                     the plugin's krew manifest, naming those archives (at RELEASE_URL) and their sha256
#   rollgate-dashboard.json                the Grafana dashboard
#   rollgate-prometheusrule.yaml           the alerts, as a prometheus-operator PrometheusRule
#   release-notes.md                       the commits since the last tag
#   checksums.txt                          sha256 of each of the above
set -euo pipefail

: "${VERSION:?VERSION is not set (make release VERSION=v0.1.0)}"
: "${KUBECTL:?KUBECTL is not set (run through make)}"
: "${HELM:?HELM is not set (run through make)}"
: "${DIST:?DIST is not set (run through make)}"
: "${IMAGE_DIR:?IMAGE_DIR is not set (run through make)}"
: "${IMAGE_PLATFORMS:?IMAGE_PLATFORMS is not set (run through make)}"
: "${COMMIT_DATE:?COMMIT_DATE is not set (run through make)}"
: "${PLUGIN_DIR:?PLUGIN_DIR is not set (run through make)}"
: "${PLUGIN_PLATFORMS:?PLUGIN_PLATFORMS is not set (run through make)}"
read -r -a sign_flags <<<"${COSIGN_SIGN_FLAGS:-}"
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/rollgate/rollgate}

[[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  { echo "error: VERSION must be a semver tag such as v0.1.0, got '$VERSION'" >&2; exit 1; }
IMAGE_LAYOUT=$IMAGE_DIR/layout
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The index the layout holds is the image a tag of the release names: its digest pins it.
digest=sha256:$(sha256sum "$IMAGE_LAYOUT/index.json" | cut -d' ' -f1)
image="$IMAGE_REPO:$VERSION@$digest"

rm -rf "$DIST"
mkdir -p "$DIST"
# Kustomize reads bases by relative path: the overlays live under the repository for the run.
overlays=$(mktemp -d "$root/.release-XXXXXX")
trap 'rm -rf "$overlays"' EXIT
for install in default namespaced; do
  mkdir -p "$overlays/$install"
  cat >"$overlays/$install/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../config/$install
images:
- name: ghcr.io/rollgate/rollgate
  newName: $IMAGE_REPO
  newTag: $VERSION
  digest: $digest
YAML
done
"$KUBECTL" kustomize "$overlays/default" >"$DIST/install.yaml"
"$KUBECTL" kustomize "$overlays/namespaced" >"$DIST/install-namespaced.yaml"
if grep -n ':latest' "$DIST"/install*.yaml; then
  echo "error: an install names an image by :latest" >&2
  exit 1
fi

# The chart of this release: its version, and the image pinned by the same digest.
chart="$overlays/chart/rollgate"
mkdir -p "$overlays/chart"
cp -r charts/rollgate "$chart"
sed -i -e "s|^  repository: .*|  repository: $IMAGE_REPO|" -e "s|^  digest: \"\"|  digest: \"$digest\"|" "$chart/values.yaml"
grep -q "digest: \"$digest\"" "$chart/values.yaml" || { echo "error: could not pin the chart's image" >&2; exit 1; }
"$HELM" package "$chart" --version "${VERSION#v}" --app-version "$VERSION" --destination "$DIST" >/dev/null

tar --sort=name --mtime="$COMMIT_DATE" --owner=0 --group=0 --numeric-owner -C "$IMAGE_LAYOUT" -cf "$DIST/rollgate-image.oci.tar" .
# The SBOMs of the platforms this image holds, not of whatever an earlier build left in IMAGE_DIR.
for p in $IMAGE_PLATFORMS; do
  cp "$IMAGE_DIR/${p//\//-}/sbom.cdx.json" "$DIST/rollgate-sbom-${p//\//-}.cdx.json"
done
if [ -n "${COSIGN_KEY:-}" ]; then
  "${COSIGN:?COSIGN is not set (run through make)}" public-key --key "$COSIGN_KEY" --outfile "$DIST/cosign.pub"
  chmod 0644 "$DIST/cosign.pub" # cosign writes it for its owner alone, as it would a private key
fi
# The kubectl plugin: an archive per platform, the same bytes from the same commit, and the krew
# manifest that installs them from the release's download URLs.
release_url=${RELEASE_URL:-https://github.com/rollgate/rollgate/releases/download/$VERSION}
{
  cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: rollgate
spec:
  version: $VERSION
  homepage: https://github.com/rollgate/rollgate
  shortDescription: Read and steer rollgate's RollingUpgradeConfigs
  description: |
    Asks what holds a version and acts on it in one command each: get, describe,
    why, history and lint; approve, reject, retry, reset, suspend and resume.
    Every act is an annotation or spec field a namespace editor may write.
  platforms:
YAML
  for p in $PLUGIN_PLATFORMS; do
    os=${p%/*} arch=${p#*/} bin=kubectl-rollgate
    [ "$os" != windows ] || bin=kubectl-rollgate.exe
    staged=$(mktemp -d)
    cp "$PLUGIN_DIR/$os-$arch/$bin" LICENSE "$staged/"
    archive=kubectl-rollgate-$os-$arch.tar.gz
    tar --sort=name --mtime="$COMMIT_DATE" --owner=0 --group=0 --numeric-owner -C "$staged" -cf - "$bin" LICENSE |
      gzip -n >"$DIST/$archive"
    rm -rf "$staged"
    cat <<YAML
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $release_url/$archive
    sha256: $(sha256sum "$DIST/$archive" | cut -d' ' -f1)
    bin: $bin
    files:
    - from: $bin
      to: .
    - from: LICENSE
      to: .
YAML
  done
} >"$DIST/rollgate.krew.yaml"
cp config/grafana/rollgate-dashboard.json "$DIST/rollgate-dashboard.json"
cp config/prometheus/prometheusrule.yaml "$DIST/rollgate-prometheusrule.yaml"

previous=$(git describe --tags --abbrev=0 HEAD^ 2>/dev/null || true)
{
  echo "# rollgate $VERSION"
  echo
  echo "Image: \`$image\` (${IMAGE_PLATFORMS// /, })."
  echo
  echo "    kubectl apply -f install.yaml                # cluster-wide, in rollgate-system"
  echo "    kubectl apply -f install-namespaced.yaml     # or for listed namespaces only"
  echo "    helm install rollgate rollgate-${VERSION#v}.tgz -n rollgate-system --create-namespace"
  echo
  echo "The kubectl plugin, \`kubectl rollgate\` (${PLUGIN_PLATFORMS// /, }):"
  echo
  echo "    kubectl krew install --manifest=rollgate.krew.yaml"
  if [ -n "${COSIGN_KEY:-}" ]; then
    echo
    echo "The image, once \`make image-push COSIGN_KEY=...\` has pushed it, is signed, and each platform's"
    echo "SBOM (CycloneDX) is attached to it as a signed attestation; checksums.txt is signed too:"
    echo
    # Signed with --tlog-upload=false, there is no transparency log entry to check.
    offline=""
    [[ " ${sign_flags[*]} " != *" --tlog-upload=false "* ]] || offline=" --insecure-ignore-tlog"
    echo "    cosign verify --key cosign.pub$offline $IMAGE_REPO@$digest"
    echo "    cosign verify-attestation --key cosign.pub$offline --type cyclonedx $IMAGE_REPO@$digest"
    echo "    cosign verify-blob --key cosign.pub$offline --signature checksums.txt.sig checksums.txt"
  fi
  echo
  echo "## Changes${previous:+ since $previous}"
  echo
  git log --no-merges --format='- %s (%h)' "${previous:+$previous..}HEAD"
} >"$DIST/release-notes.md"

(cd "$DIST" && sha256sum -- * >checksums.txt)
if [ -n "${COSIGN_KEY:-}" ]; then
  # The manifests choose the digest and the RBAC: their checksums are signed with the image's key.
  "$COSIGN" sign-blob --yes --key "$COSIGN_KEY" "${sign_flags[@]}" --output-signature "$DIST/checksums.txt.sig" \
    "$DIST/checksums.txt" >/dev/null
  chmod 0644 "$DIST/checksums.txt.sig"
fi
echo "==> $DIST: $image"
ls -l "$DIST"
