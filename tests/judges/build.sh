#!/usr/bin/env bash
# Builds toolfit's judge against the llama.cpp that a llama-cpp-python sdist (from the Python package
# registry) vendors. Only llama.cpp's JSON-schema converter and grammar engine are compiled.
#   tests/judges/build.sh 0.3.36     # prints the judge's path; cached under $TOOLFIT_JUDGE_DIR
set -euo pipefail
version=${1:?usage: build.sh LLAMA_CPP_PYTHON_VERSION}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TOOLFIT_JUDGE_DIR:-$HOME/.cache/toolfit/judges}
bin=$cache/judge-$version
stamp=$(cat "$here/judge.cpp" "$here/stubs.cpp" "$here/build.sh" | sha256sum | cut -c1-16)
if [[ -x $bin && -f $bin.stamp && $(cat "$bin.stamp") == "$stamp" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
pkg=llama_cpp_python-$version
src=$cache/$pkg
if [[ ! -f $src/vendor/llama.cpp/common/json-schema-to-grammar.cpp ]]; then
  if ! ls "$cache/$pkg".tar.gz >/dev/null 2>&1; then
    # pip prepares the sdist's metadata, which needs its build backend and a cmake: wheels of cmake and
    # ninja go on PATH for this one step, so nothing is compiled.
    tools=$cache/.buildtools
    if [[ ! -x $tools/bin/cmake ]]; then
      python3 -m venv "$tools" >&2 && "$tools/bin/pip" install --quiet cmake ninja >&2
    fi
    PATH=$tools/bin:$PATH python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$cache" "llama-cpp-python==$version" >&2
  fi
  tar -xzf "$cache/$pkg.tar.gz" -C "$cache" --wildcards \
    "$pkg/vendor/llama.cpp/common/*" "$pkg/vendor/llama.cpp/src/*" "$pkg/vendor/llama.cpp/include/*" \
    "$pkg/vendor/llama.cpp/ggml/include/*" "$pkg/vendor/llama.cpp/vendor/*" 2>/dev/null ||
  tar -xzf "$cache/$pkg.tar.gz" -C "$cache" --wildcards \
    "$pkg/vendor/llama.cpp/common/*" "$pkg/vendor/llama.cpp/src/*" "$pkg/vendor/llama.cpp/include/*" "$pkg/vendor/llama.cpp/ggml/include/*"
fi
L=$src/vendor/llama.cpp
# which generation of llama.cpp's internal API the sources are
flags=()
grep -qs "class common_json" "$L/common/json.h" && flags+=(-DTJ_COMMON_JSON=1) || flags+=(-DTJ_COMMON_JSON=0)
[[ -f $L/vendor/nlohmann/json.hpp ]] && flags+=(-DTJ_VENDORED_NLOHMANN=1) || flags+=(-DTJ_VENDORED_NLOHMANN=0)
if [[ -f $L/common/grammar-parser.cpp ]]; then flags+=(-DTJ_GRAMMAR=1)
elif grep -Eq "bool +lazy" "$L/src/llama-grammar.h"; then flags+=(-DTJ_GRAMMAR=3)
else flags+=(-DTJ_GRAMMAR=2); fi
grep -Eq "void llama_grammar_accept\(struct llama_grammar \* grammar, uint32_t chr\)" "$L/src/llama-grammar.h" &&
  flags+=(-DTJ_STACKS=0) || flags+=(-DTJ_STACKS=1)
files=("$here/judge.cpp" "$here/stubs.cpp" "$L/common/json-schema-to-grammar.cpp")
for f in common/json-schema.cpp common/json.cpp common/unicode.cpp common/trie.cpp common/grammar-parser.cpp \
         src/llama-grammar.cpp src/unicode.cpp src/unicode-data.cpp; do
  [[ -f $L/$f ]] && files+=("$L/$f")
done
inc=(-I"$L/src" -I"$L/common" -I"$L/include" -I"$L/ggml/include")
[[ -d $L/vendor ]] && inc+=(-I"$L/vendor")
obj=$(mktemp -d)
trap 'rm -rf "$obj"' EXIT
n=0
for f in "${files[@]}"; do
  g++ -std=c++17 -O2 -w "${inc[@]}" "${flags[@]}" -c "$f" -o "$obj/$n.o" >&2 &
  n=$((n + 1))
  while (( $(jobs -rp | wc -l) >= $(nproc) )); do sleep 0.1; done
done
wait
g++ -o "$bin.tmp" "$obj"/*.o >&2
mv "$bin.tmp" "$bin"
echo "$stamp" > "$bin.stamp"
echo "$bin"
