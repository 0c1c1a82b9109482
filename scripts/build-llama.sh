#!/usr/bin/env bash
# Build llama.cpp's shared libraries from the llama-cpp-python source on PyPI, with the
# given CMake flags (and a patch), into OUT. Used by build-llama-amx.sh (the AMX build
# make install adds where tiles are granted) and by benchmarks/judge_speed.py (an
# AVX2-only build, to time the kernels an AVX2 machine runs). Prints the build log's tail
# and fails when anything goes wrong; OUT appears only complete.
#
#   scripts/build-llama.sh PYTHON VERSION OUT "FLAGS" [PATCH]
set -uo pipefail
py=${1:?usage: build-llama.sh PYTHON VERSION OUT FLAGS [PATCH]}
version=${2:?} out=${3:?} flags=${4:?} patch=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work" || {
  echo "cannot download the llama-cpp-python $version source"; exit 1; }
tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src=$(echo "$work"/llama_cpp_python-*/)
if [ -n "$patch" ]; then
  (cd "$src" && patch -p1 --batch --quiet < "$patch") || { echo "the patch does not apply"; exit 1; }
fi
# shellcheck disable=SC2086  # the flags are a list of words
if ! cmake -S "$src/vendor/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_CURL=OFF -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DCMAKE_BUILD_RPATH='$ORIGIN' $flags >"$work/cmake.log" 2>&1 \
  || ! cmake --build "$work/build" --target llama -j"$(nproc)" >>"$work/cmake.log" 2>&1; then
  echo "the build failed (last lines below)"; tail -5 "$work/cmake.log"; exit 1
fi
mkdir -p "$out.partial"
cp -P "$work"/build/bin/lib*.so* "$out.partial/"
rm -rf "$out" && mv "$out.partial" "$out"
