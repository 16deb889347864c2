#!/usr/bin/env bash
# Builds Karpenter's own kwok controller (the `kwok` main package of sigs.k8s.io/karpenter, at the
# version in hack/karpenter/VERSION) from the Go module proxy into the per-user cache, for the
# takeover e2e tests (tests/e2e/test_takeover.py): they hand a fleet from Karpenter to karpy and
# back. Prints the binary path. Skips the build when the binary exists; one build at a time.
# A cold build takes about 16 minutes on two cores; `make binaries` runs it before the tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(cat "$here/VERSION")
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/karpenter/v${version}"
bin="$out/karpenter-kwok"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "Go >= 1.26 is needed to build Karpenter's kwok controller (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out"
exec 9>"$out/.build.lock"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
start=$(date +%s)
echo "building Karpenter v${version}'s kwok controller into $out (first time only; takes several minutes)" >&2
# `go install pkg@version` builds with the module's own go.mod and go.sum, exactly as released.
tmp=$(mktemp -d "$out/.gobin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS="-trimpath -buildvcs=false" \
  go install -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=v${version}" \
  "sigs.k8s.io/karpenter/kwok@v${version}"
mv "$tmp/kwok" "$bin"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
