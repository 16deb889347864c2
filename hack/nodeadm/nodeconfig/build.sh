#!/usr/bin/env bash
# Builds hack/nodeadm/nodeconfig (nodeadm's v1alpha1 NodeConfig types, at the pseudo-version
# pinned in hack/nodeadm/go.mod) into the control plane binary directory. Prints the path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../gobuild.sh"
build_lock nodeconfig
cd "$here/.."
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
go_install nodeconfig ./nodeconfig "-s -w"
