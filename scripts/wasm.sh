#!/usr/bin/env bash
# Builds dist/toolfit.wasm: the filter for wasm32-wasip1, size-tuned (profile `wasm`), then wasm-opt -Oz.
# Installs what it needs: the Rust target (rustup) and binaryen's wasm-opt, pinned (npm; Debian's as a fallback).
# --floor: dist/toolfit-floor.wasm, the floor `make bench-envoy` measures (hold, one copy into the VM).
# --test: dist/toolfit-test.wasm instead, with the test-trap feature (the e2e test of Envoy's failure
# policy; its own target dir, so neither build undoes the other).
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist/toolfit.wasm features=() tdir=target
if [[ ${1:-} == --test ]]; then
  out=dist/toolfit-test.wasm features=(--features test-trap) tdir=target/test-trap
elif [[ ${1:-} == --floor ]]; then
  # make bench-envoy's floor: a filter that holds the request, copies its body into the VM once and
  # forwards it, reading nothing (Cargo.toml)
  out=dist/toolfit-floor.wasm features=(--features bench-floor) tdir=target/bench-floor
fi
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1 >&2
fi
# wasm SIMD (simd128, which Envoy's V8 runs): the body scan skips strings 16 bytes at a time, xxh3
# hashes cache keys in vectors. TOOLFIT_WASM_SIMD=0 builds without it (to measure the difference); the
# flag goes to every crate, so it has its own target dir and neither build undoes the other.
simd=(--enable-simd)
if [[ ${TOOLFIT_WASM_SIMD:-1} == 0 ]]; then
  simd=() tdir=$tdir/no-simd
else
  export CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="${CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS:-} -C target-feature=+simd128"
fi
# The panic locations core and the crates keep (a bounds check's file and line) name their sources by
# absolute path: this machine's home, the registry's index directory, the toolchain's. Written relative
# to those roots they cost 4 KB less, and the module no longer depends on where it was built.
# The registry's sources must be there to be named: fetch them first (nothing to do once they are).
cargo fetch --quiet
remap=("--remap-path-prefix=$(rustc --print sysroot)/lib/rustlib/src/rust=")
shopt -s nullglob
for reg in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
  remap+=("--remap-path-prefix=${reg%/}=")
done
export CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="${CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS:-} ${remap[*]}"
# cdylib only here: the native build keeps an rlib, so the CLI binary and the library never collide
cargo rustc --quiet --profile wasm --target wasm32-wasip1 --lib --no-default-features "${features[@]}" --target-dir "$tdir" --crate-type cdylib
raw=$tdir/wasm32-wasip1/wasm/toolfit.wasm
mkdir -p dist
# wasm-opt pinned (binaryen from npm, its Node build): the same input gives the same bytes on any
# machine, so the module's size and digest in the docs are what a fresh clone builds. Debian's
# binaryen (108) is the fallback when npm cannot install it, said on stderr (its output is about 5 KB
# larger and has another digest).
BINARYEN=132.0.0
bdir=${TOOLFIT_CACHE:-$HOME/.cache/toolfit}/binaryen-$BINARYEN
wasm_opt=$bdir/node_modules/.bin/wasm-opt
if [[ ! -x $wasm_opt ]] && command -v npm >/dev/null; then
  mkdir -p "$bdir"
  npm install --prefix "$bdir" --no-audit --no-fund --silent "binaryen@$BINARYEN" >/dev/null 2>&1 || true
fi
if [[ ! -x $wasm_opt ]]; then
  echo "binaryen $BINARYEN from npm not available: using the system's wasm-opt (the module's bytes differ from a pinned build)" >&2
  wasm_opt=wasm-opt
  if ! command -v wasm-opt >/dev/null; then
    if [[ $(id -u) == 0 ]]; then apt-get install -y -qq binaryen >/dev/null 2>&1 || true
    elif command -v sudo >/dev/null; then sudo apt-get install -y -qq binaryen >/dev/null 2>&1 || true
    fi
  fi
fi
if command -v "$wasm_opt" >/dev/null; then
  # stripped modules lose their target_features section: name the features rustc emits; --converge
  # repeats -Oz until the module stops shrinking
  "$wasm_opt" -Oz --converge --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue "${simd[@]}" \
    "$raw" -o "$out"
else
  echo "wasm-opt not available: $out is not size-optimised" >&2
  cp "$raw" "$out"
fi
echo "$out: $(stat -c %s "$out") bytes (before wasm-opt: $(stat -c %s "$raw"))" >&2
