#!/usr/bin/env bash
# Builds the local control plane binaries (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kubectl) for the release in hack/k8s/RELEASE into the
# per-user cache, so every clone and CI run on this machine reuses them.
# Prints the binary directory. Skips the build when all binaries exist.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
release=$(cat "$here/RELEASE")
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/k8s/v${release}"
bins=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)

missing=0
for b in "${bins[@]}"; do [ -x "$out/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "Go >= 1.26 is needed to build the local control plane (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out.tmp"
minor=${release#*.}; minor=${minor%%.*}
# Without these, /version reports v0.0.0-master and version gates misbehave.
ver="-X k8s.io/component-base/version.gitVersion=v${release} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v${release} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod -buildvcs=false"
cd "$here"
start=$(date +%s)
echo "building Kubernetes v${release} control plane into $out (first time only; takes several minutes)" >&2
go build -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
for b in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  go build -ldflags "-s -w $ver" -o "$out.tmp/$b" "k8s.io/kubernetes/cmd/$b"
done
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
