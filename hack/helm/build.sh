#!/usr/bin/env bash
# Builds helm v3 (version pinned in hack/helm/go.mod) into the control plane binary directory
# next to kubectl. Prints the binary path; skips the build when it exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/k8s/v$(cat "$here/../k8s/RELEASE")"
bin="$out/helm"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "Go >= 1.26 is needed to build helm (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out"
exec 9>"$out/.build-helm.lock"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
cd "$here"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
kminor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${kminor}"
ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${kminor}"
start=$(date +%s)
echo "building helm ${version} into $out" >&2
CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out/.helm.tmp" helm.sh/helm/v3/cmd/helm
mv "$out/.helm.tmp" "$bin"
echo "built helm in $(( $(date +%s) - start ))s" >&2
echo "$bin"
