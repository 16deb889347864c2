# Sourced by hack/helm/build.sh and hack/kwok/build.sh: each builds one Go command into the
# control plane binary directory (`$out`, per user and release), once per machine, so the
# skip-when-built check, the build lock and the rename of a finished binary live here.

out="${XDG_CACHE_HOME:-$HOME/.cache}/karpy/k8s/v$(cat "$(dirname "${BASH_SOURCE[0]}")/k8s/RELEASE")"

# build_lock NAME: if $out/NAME exists, print its path and exit; else hold NAME's build lock
# (several test sessions may ask at once) and return, exiting after all if another build
# finished meanwhile.
build_lock() {
  local bin="$out/$1"
  if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
  command -v go >/dev/null || { echo "Go >= 1.26 is needed to build $1 (https://go.dev/dl)" >&2; exit 1; }
  mkdir -p "$out"
  exec 9>"$out/.build-$1.lock"
  flock 9
  if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
}

# go_install NAME PACKAGE LDFLAGS [VERSION]: build PACKAGE without cgo into $out/NAME, under a
# temporary name first so a half-written file never counts as built; print the path.
go_install() {
  local name=$1 package=$2 ldflags=$3 start
  start=$(date +%s)
  echo "building $name${4:+ $4} into $out" >&2
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out/.$name.tmp" "$package"
  mv "$out/.$name.tmp" "$out/$name"
  echo "built $name in $(( $(date +%s) - start ))s" >&2
  echo "$out/$name"
}
