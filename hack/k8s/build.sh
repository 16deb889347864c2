#!/usr/bin/env bash
# Builds the local control plane binaries (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kubectl) for the release in hack/k8s/RELEASE into the
# per-user cache, so every clone and CI run on this machine reuses them.
# Prints the binary directory. Skips the build when all binaries exist.
# helm and kwok are built into the same directory by hack/helm/build.sh and hack/kwok/build.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
release=$(cat "$here/RELEASE")
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/k8s/v${release}"
bins=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)

all_built() {
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}
if all_built; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "Go >= 1.26 is needed to build the local control plane (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out"
# One build at a time per release (several test sessions may ask at once); the loser reuses
# the winner's binaries.
exec 9>"$out/.build.lock"
flock 9
if all_built; then echo "$out"; exit 0; fi

minor=${release#*.}; minor=${minor%%.*}
# Without these, /version reports v0.0.0-master and version gates misbehave.
ver="-X k8s.io/component-base/version.gitVersion=v${release} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v${release} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod -buildvcs=false"
cd "$here"
start=$(date +%s)
echo "building Kubernetes v${release} control plane into $out (first time only; takes several minutes)" >&2
# Each binary is written under a temporary name and renamed, so a half-written file never
# counts as built.
[ -x "$out/etcd" ] || { go build -ldflags "-s -w" -o "$out/.etcd.tmp" go.etcd.io/etcd/server/v3 && mv "$out/.etcd.tmp" "$out/etcd"; }
for b in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  [ -x "$out/$b" ] && continue
  go build -ldflags "-s -w $ver" -o "$out/.$b.tmp" "k8s.io/kubernetes/cmd/$b"
  mv "$out/.$b.tmp" "$out/$b"
done
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
