#!/usr/bin/env bash
# Builds llama.cpp's llama-server (CPU only) from the llama.cpp a llama-cpp-python sdist (from the Python
# package registry) vendors, and prints the binary's path. Cached under $TOOLFIT_SERVER_DIR
# (default ~/.cache/toolfit/server); rebuilt when this script changes.
#   scripts/llama_server.sh 0.3.36     # llama.cpp 2026-10
#   scripts/llama_server.sh 0.3.16     # llama.cpp 2025-08 (the last that segfaults on `(?:` patterns)
# Only the server is built: no tests, examples, web UI (it would be downloaded), CURL or OpenSSL.
set -euo pipefail
version=${1:?usage: llama_server.sh LLAMA_CPP_PYTHON_VERSION}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TOOLFIT_SERVER_DIR:-$HOME/.cache/toolfit/server}
bin=$cache/llama-server-$version
stamp=$(sha256sum "$here/llama_server.sh" | cut -c1-16)
if [[ -x $bin && -f $bin.stamp && $(cat "$bin.stamp") == "$stamp" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
# cmake and ninja from the package registry, in a venv of their own (shared with the judges' builds)
tools=${TOOLFIT_JUDGE_DIR:-$HOME/.cache/toolfit/judges}/.buildtools
if [[ ! -x $tools/bin/cmake || ! -x $tools/bin/ninja ]]; then
  python3 -m venv "$tools" >&2 && "$tools/bin/pip" install --quiet cmake ninja >&2
fi
pkg=llama_cpp_python-$version
sdist=$cache/$pkg.tar.gz
if [[ ! -f $sdist ]]; then
  judged=${TOOLFIT_JUDGE_DIR:-$HOME/.cache/toolfit/judges}/$pkg.tar.gz
  if [[ -f $judged ]]; then
    cp "$judged" "$sdist"
  else
    # pip prepares the sdist's metadata, which needs its build backend and a cmake on PATH
    PATH=$tools/bin:$PATH python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$cache" "llama-cpp-python==$version" >&2
  fi
fi
src=$cache/src-$version
if [[ ! -f $src/$pkg/vendor/llama.cpp/CMakeLists.txt ]]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$sdist" -C "$src" "$pkg/vendor/llama.cpp"
fi
L=$src/$pkg/vendor/llama.cpp
# The web UI is compiled in as a C array of its ~1.5 MB gzip (trees up to 2025-08): g++ on that 9.5 MB
# initializer takes most of the build and peaks near 14 GB resident, the largest process of `make test`.
# The tests never open the UI: a small page stands in for it (in the extracted tree; the sdist is as
# published).
ui=$L/tools/server/public/index.html.gz
if [[ -f $ui && $(stat -c %s "$ui") -gt 65536 ]]; then
  printf '<!doctype html><title>llama-server</title><p>web UI left out of this build (toolfit tests)</p>\n' | gzip -9n >"$ui"
fi
flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF
       -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_CURL=OFF)
# options that exist only in newer trees (older cmake ignores unknown -D with a warning, but say only
# what the tree knows)
grep -qs "LLAMA_BUILD_APP" "$L/CMakeLists.txt" && flags+=(-DLLAMA_BUILD_APP=OFF)
grep -rqs "LLAMA_USE_PREBUILT_UI" "$L/CMakeLists.txt" "$L/tools/server/CMakeLists.txt" && flags+=(-DLLAMA_USE_PREBUILT_UI=OFF)
grep -rqs "LLAMA_BUILD_UI" "$L/CMakeLists.txt" "$L/tools/server/CMakeLists.txt" && flags+=(-DLLAMA_BUILD_UI=OFF)
grep -qs "LLAMA_OPENSSL" "$L/CMakeLists.txt" && flags+=(-DLLAMA_OPENSSL=OFF)
build=$src/build
PATH=$tools/bin:$PATH cmake -S "$L" -B "$build" "${flags[@]}" >&2
PATH=$tools/bin:$PATH ninja -C "$build" -j "$(nproc)" llama-server >&2
cp "$build/bin/llama-server" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$stamp" >"$bin.stamp"
echo "$bin"
