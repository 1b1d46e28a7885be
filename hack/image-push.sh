#!/usr/bin/env bash
# image-push.sh IMG: push the OCI layout `make image` wrote in $IMAGE_DIR to IMG
# (registry/repository:tag). With COSIGN_KEY (a cosign key file, or any key reference cosign
# takes, e.g. a KMS URI), sign the index and every platform's image, and attach each platform's
# CycloneDX SBOM to its image as a signed attestation. Run through `make image-push`.
#
# An encrypted key's password comes from COSIGN_PASSWORD, or cosign asks for it on this script's
# input (the terminal), once for each signature.
#
# Verify with the public key:
#   cosign verify --key cosign.pub --insecure-ignore-tlog REPOSITORY@DIGEST
#   cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type cyclonedx REPOSITORY@DIGEST
# (--insecure-ignore-tlog only when it was signed with COSIGN_SIGN_FLAGS=--tlog-upload=false, the default.)
set -euo pipefail

img=${1:?usage: image-push.sh registry/repository:tag}
: "${IMAGE_DIR:?IMAGE_DIR is not set (run through make)}"
: "${COSIGN:?COSIGN is not set (run through make)}"
read -r -a sign_flags <<<"${COSIGN_SIGN_FLAGS:-}"

pushed=$(go run ./hack/image push -layout "$IMAGE_DIR/layout" -image "$img")
echo "$pushed"
if [ -z "${COSIGN_KEY:-}" ]; then
  echo "==> not signed: set COSIGN_KEY to sign the image and attach its SBOMs"
  exit 0
fi
index=$(sed -n 's/^index //p' <<<"$pushed")
# --recursive: the index and each image it lists, so that a pull by platform verifies too.
"$COSIGN" sign --yes --recursive --key "$COSIGN_KEY" "${sign_flags[@]}" "$index"
# Each platform's SBOM goes to its image and to the index, which is what a tag or a release's digest
# names: verify-attestation of either finds it. The list is read on its own descriptor, so that
# cosign keeps this script's input (an encrypted key's password, without COSIGN_PASSWORD).
while read -r platform ref <&3; do
  [ "$platform" != index ] || continue
  for subject in "$ref" "$index"; do
    "$COSIGN" attest --yes --key "$COSIGN_KEY" "${sign_flags[@]}" --type cyclonedx \
      --predicate "$IMAGE_DIR/${platform//\//-}/sbom.cdx.json" "$subject"
  done
done 3<<<"$pushed"
echo "==> signed $(head -1 <<<"$pushed" | cut -d' ' -f2) and attached the SBOM of each platform"
