#!/usr/bin/env bash
# Builds awslabs/amazon-eks-ami's `nodeadm` (pseudo-version pinned in hack/nodeadm/go.mod, the
# one the Go module proxy serves) into the control plane binary directory; the AWS user data
# tests run its `config check` on the NodeConfig karpy writes for AL2023. Prints the path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../gobuild.sh"
build_lock nodeadm
cd "$here"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
go_install nodeadm github.com/awslabs/amazon-eks-ami/nodeadm/cmd/nodeadm "-s -w" \
  "$(sed -n 's/^\tgithub.com\/awslabs\/amazon-eks-ami\/nodeadm \(v[^ ]*\).*/\1/p' go.mod)"
