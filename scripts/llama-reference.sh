#!/usr/bin/env bash
# Build (once) llama.cpp's own llama-server and llama-bench from the very sources vendored in the
# llama-cpp-python release Hearth runs, with Hearth's portable flags, and print their folder.
#
# Why: bench/reference_speed.py measures Hearth against llama.cpp's C++ itself (#31), which is
# the limit Hearth's decode loop can approach; built from other sources or with other flags
# (-march=native, say) the comparison would say nothing. Cached like the wheel, by version and
# flags, outside the clone; not part of `make test` (about 10 minutes on 2 cores).
set -euo pipefail

VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
HERE="$(cd "$(dirname "$0")" && pwd)"
FLAGS="$("$HERE/llama-wheel.sh" --portable-flags) -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON"
PY="${1:-python3}"

key=$(printf '%s|%s' "$VERSION" "$FLAGS" | sha256sum | cut -c1-16)
dir="${HEARTH_REFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth/llama-reference}/$key"
if [ ! -x "$dir/bin/llama-server" ] || [ ! -x "$dir/bin/llama-bench" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  echo "Building llama-server and llama-bench from llama-cpp-python $VERSION's llama.cpp with: $FLAGS" >&2
  "$PY" -m pip download -q --no-binary :all: --no-deps -d "$work" "llama-cpp-python==$VERSION" >&2
  tar -xzf "$work"/llama_cpp_python-"$VERSION".tar.gz -C "$work"
  src="$work/llama_cpp_python-$VERSION/vendor/llama.cpp"
  # shellcheck disable=SC2086  # FLAGS is a list of cmake arguments
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release $FLAGS >&2
  cmake --build "$work/build" --target llama-server llama-bench -j "$(nproc)" >&2
  mkdir -p "$dir/bin"
  cp "$work/build/bin/llama-server" "$work/build/bin/llama-bench" "$dir/bin/"
  find "$work/build/bin" -maxdepth 1 -name '*.so*' -exec cp -P {} "$dir/bin/" \;
  printf '%s\n' "$FLAGS" > "$dir/FLAGS"
fi
echo "$dir/bin"
