#!/usr/bin/env bash
# Build (once) and print the path of a llama-cpp-python wheel compiled with portable flags.
#
# Why a script: llama-cpp-python is source-only on the registry, and pip's wheel cache ignores
# CMAKE_ARGS, so a wheel built once with other flags (say -march=native, which segfaults in
# ggml's AMX path on these machines) would be silently reused. We build into a folder keyed
# by the flags, outside the clone, so every clone and CI run on this machine reuses it.
set -euo pipefail

VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=ON"
FLAGS="${HEARTH_CMAKE_ARGS:-$PORTABLE}"
# scripts/llama-wheel-cuda.sh builds on the same portable CPU flags.
if [ "${1:-}" = "--portable-flags" ]; then echo "$PORTABLE"; exit 0; fi
PY="${1:-python3}"

key=$(printf '%s|%s' "$VERSION" "$FLAGS" | sha256sum | cut -c1-16)
dir="${HEARTH_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth/wheels}/$key"
wheel=$(ls "$dir"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  mkdir -p "$dir"
  echo "Building llama-cpp-python $VERSION with: $FLAGS (several minutes, once per machine)" >&2
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$dir" "llama-cpp-python==$VERSION" >&2
  printf '%s\n' "$FLAGS" > "$dir/FLAGS"
  wheel=$(ls "$dir"/llama_cpp_python-"$VERSION"-*.whl | head -n1)
fi
echo "$wheel"
