#!/usr/bin/env bash
# Builds hack/kubeletlabels (k8s.io/kubelet at the control plane's release, pinned in go.mod)
# into the control plane binary directory. Prints the path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../gobuild.sh"
build_lock kubeletlabels
cd "$here"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
go_install kubeletlabels . "-s -w"
