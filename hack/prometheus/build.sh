#!/usr/bin/env bash
# Builds Prometheus's `prometheus` server and `promtool` from the Go module proxy, pinned to the
# module version in hack/prometheus/VERSION (v0.3xx.y of github.com/prometheus/prometheus is
# Prometheus 3.xx.y), into the per-user cache so every clone and CI run on this machine reuses
# them. Prints the binary directory; skips the build when both binaries exist.
#
# No web UI assets: without the `builtinassets` tag Prometheus serves its UI from disk and the
# HTTP API (all the tests use) works without it. No service discovery plugins either
# (`remove_all_sd`): the tests scrape static targets, and the cloud SDKs the plugins pull in are
# most of the build time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module_version=$(cat "$here/VERSION")
minor=${module_version#v0.}; minor=${minor%%.*}
patch=${module_version##*.}
release="3.$(( minor % 100 )).${patch}"
out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/prometheus/v${release}"
bins=(prometheus promtool)

all_built() {
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}
if all_built; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "Go >= 1.26 is needed to build Prometheus (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$out"
# One build at a time (several test sessions may ask at once); the loser reuses the binaries.
exec 9>"$out/.build.lock"
flock 9
if all_built; then echo "$out"; exit 0; fi

# `go install pkg@version` builds with the module's own go.mod and go.sum (Prometheus has no
# replace directives), so the pin is the one line in VERSION.
tmp=$(mktemp -d "$out/.gobin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS="-trimpath -buildvcs=false"
v=github.com/prometheus/common/version
ldflags="-s -w -X $v.Version=${release} -X $v.Revision=${module_version} -X $v.Branch=HEAD -X $v.BuildUser=karpy -X $v.BuildDate=19700101-00:00:00"
start=$(date +%s)
echo "building Prometheus ${release} (${module_version}) into $out (first time only; takes several minutes)" >&2
for b in "${bins[@]}"; do
  [ -x "$out/$b" ] && continue
  go install -tags remove_all_sd -ldflags "$ldflags" "github.com/prometheus/prometheus/cmd/$b@${module_version}"
  mv "$tmp/$b" "$out/$b"
done
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
