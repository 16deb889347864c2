#!/usr/bin/env bash
# Tries to build sigs.k8s.io/kwok's `kwok` controller (version pinned in hack/kwok/go.mod)
# into the control plane binary directory. Optional: nothing in karpy needs it, and callers
# must treat a failure as "kwok unavailable". Prints the binary path on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../gobuild.sh"
build_lock kwok
cd "$here"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
go_install kwok sigs.k8s.io/kwok/cmd/kwok "-s -w"
