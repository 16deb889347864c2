#!/usr/bin/env bash
# Builds helm v3 (version pinned in hack/helm/go.mod) into the control plane binary directory
# next to kubectl. Prints the binary path; skips the build when it exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../gobuild.sh"
build_lock helm
cd "$here"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
kminor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${kminor}"
ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${kminor}"
go_install helm helm.sh/helm/v3/cmd/helm "$ldflags" "$version"
