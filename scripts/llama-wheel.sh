#!/usr/bin/env bash
# Install llama-cpp-python built for this machine, from a wheel kept per (version, CMake flags).
#
# pip's own wheel cache is keyed on the source archive alone: a wheel built with other flags
# (AVX-512 on one machine, CPUINFO=/dev/null for an AVX2 build, a build with the multimodal
# library) would be reused without a word. Here the key is the version and CMAKE_ARGS, so a
# second `make install` with the same flags installs in seconds, and other flags build anew.
# The build leaves out what assay never loads: the multimodal library (-DLLAVA_BUILD=OFF);
# llama.cpp's tools, examples, server and tests are already off when it is built as a
# subproject.
#
#   scripts/llama-wheel.sh PYTHON VERSION      (CMAKE_ARGS: the flags, from the Makefile)
set -euo pipefail
py=${1:?usage: llama-wheel.sh PYTHON VERSION}
version=${2:?usage: llama-wheel.sh PYTHON VERSION}
flags="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF"
key=$(printf '%s\n%s\n' "$version" "$flags" | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/assay/llama-wheels/$version-$key"
if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama.cpp $version for this CPU ($flags): a few minutes, once"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  start=$(date +%s)
  CMAKE_ARGS="$flags" "$py" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -w "$dir.partial"
  echo "$flags" > "$dir.partial/FLAGS"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
  echo "llama.cpp built in $(( $(date +%s) - start )) s; kept in $dir"
else
  echo "llama.cpp $version: the wheel built here with these flags ($dir)"
fi
"$py" -m pip install --quiet --no-deps --force-reinstall "$dir"/llama_cpp_python-*.whl
