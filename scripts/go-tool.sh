#!/usr/bin/env bash
# Builds (once) a Go command from a pinned module on the Go module proxy and prints its path:
#   scripts/go-tool.sh PACKAGE@VERSION      e.g. github.com/envoyproxy/gateway/cmd/egctl@v1.9.1
# The modules and the build cache live under ~/.cache/toolfit/go (GOMODCACHE, GOCACHE), the command in
# ~/.cache/toolfit/go/bin/NAME-VERSION. The machine's own Go builds it (GOTOOLCHAIN=local: no toolchain
# download); a module that needs a newer Go fails here, saying so.
set -euo pipefail
spec=$1
pkg=${spec%@*}
version=${spec##*@}
name=$(basename "$pkg")
root=${TOOLFIT_GO:-$HOME/.cache/toolfit/go}
out=$root/bin/$name-$version
mkdir -p "$root/bin"
# one build at a time per tool: scripts/go-prefetch.py may be building it already
exec 9>"$out.lock"
flock 9
if [[ ! -x $out ]]; then
  tmp=$(mktemp -d)
  GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOMODCACHE=$root/mod GOCACHE=$root/build GOBIN=$tmp \
    go install "$spec" >&2
  mkdir -p "$root/bin"
  mv "$tmp/$name" "$out"
  rm -rf "$tmp"
fi
echo "$out"
