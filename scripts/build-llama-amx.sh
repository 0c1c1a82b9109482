#!/usr/bin/env bash
# Build llama.cpp's libraries a second time, with AMX, for the local judge, where this
# machine grants AMX tiles; the judge loads them only after probing again at run time
# (src/assay/models/_amx.py). Anything short of a working, agreeing AMX build leaves the
# default build in use and says why: this script never fails the install.
#
#   scripts/build-llama-amx.sh VENV      (CMAKE_ARGS: the default build's flags, from the Makefile)
set -uo pipefail
venv=${1:?usage: build-llama-amx.sh VENV}
here=$(cd "$(dirname "$0")" && pwd)
py="$venv/bin/python"
out="$venv/lib/assay-llama-amx"
say() { echo "AMX: $*"; }

if ! grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  say "this CPU does not list amx_int8: the default build is used"; rm -rf "$out"; exit 0
fi
version=$("$py" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))') || {
  say "llama-cpp-python is not installed"; exit 0; }
flags="${CMAKE_ARGS:-} -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON -DGGML_AMX_BF16=ON"
key=$( (echo "$version $flags"; cat "$here/llama-amx.patch" "$here/amx_probe.c") | sha256sum | cut -c1-16)
# Where the AMX build is loaded, the judge reads the default weights' Q8_0 copy: make it now
# (about 15 s, once) rather than in the user's first run. Never fails the install.
weights() { "$py" -m assay.models._weights prepare 2>&1 | tail -1 | sed 's/^/AMX: weights: /'; }
if [ -f "$out/BUILD.json" ] && grep -q "\"key\": \"$key\"" "$out/BUILD.json"; then
  say "up to date ($out)"; weights; exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! gcc -O2 -mamx-tile -mamx-int8 "$here/amx_probe.c" -o "$work/amx-probe" 2>"$work/gcc.log"; then
  say "cannot compile the probe ($(tail -1 "$work/gcc.log")): the default build is used"; exit 0
fi
if ! said=$("$work/amx-probe" 2>&1); then
  say "this CPU lists AMX but the probe was refused (${said:-killed}): the default build is used"; rm -rf "$out"; exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/assay/llama-amx/$key"
if [ ! -f "$cache/libllama.so" ]; then
  say "granted; building llama.cpp $version with AMX (about 5 minutes on two cores, once per machine)"
  if ! said=$("$here/build-llama.sh" "$py" "$version" "$cache" "$flags" "$here/llama-amx.patch" 2>&1); then
    say "$said"; say "the default build is used"; exit 0
  fi
fi

rm -rf "$out.partial" && mkdir -p "$out.partial"
cp -P "$cache"/lib*.so* "$out.partial/"
cp "$work/amx-probe" "$out.partial/amx-probe"
if ! verdict=$("$py" -m assay.models._amx_check check "$out.partial" 2>&1); then
  say "the AMX build was not kept: $(echo "$verdict" | tail -1)"; rm -rf "$out.partial" "$out"; exit 0
fi
printf '{"llama_cpp_python": "%s", "key": "%s", "cmake_args": "%s", "check": "%s"}\n' \
  "$version" "$key" "$flags" "$(echo "$verdict" | tail -1 | tr -d '"\\')" > "$out.partial/BUILD.json"
rm -rf "$out" && mv "$out.partial" "$out"
say "installed at $out ($(echo "$verdict" | tail -1))"
weights
