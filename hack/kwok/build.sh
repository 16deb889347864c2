#!/usr/bin/env bash
# Tries to build sigs.k8s.io/kwok's `kwok` controller (version pinned in hack/kwok/go.mod)
# into the control plane binary directory. Optional: nothing in karpy needs it, and callers
# must treat a failure as "kwok unavailable". Prints the binary path on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/k8s/v$(cat "$here/../k8s/RELEASE")"
bin="$out/kwok"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "Go >= 1.26 is needed to build kwok (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out"
exec 9>"$out/.build-kwok.lock"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
cd "$here"
start=$(date +%s)
echo "building kwok into $out" >&2
CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod -buildvcs=false" go build -ldflags "-s -w" -o "$out/.kwok.tmp" sigs.k8s.io/kwok/cmd/kwok
mv "$out/.kwok.tmp" "$bin"
echo "built kwok in $(( $(date +%s) - start ))s" >&2
echo "$bin"
