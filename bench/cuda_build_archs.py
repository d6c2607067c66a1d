"""What building the CUDA wheel for the default architecture list costs, from a one-architecture build.

A CUDA build of llama.cpp takes over an hour on this project's 2-core machine for one GPU
architecture; the default list (scripts/llama-wheel-cuda.sh) has seven, and a build of all seven
would hold both cores for hours. So this measures the ratio instead, in one run: it re-runs a
spread sample of the nvcc commands from a finished build's log, once for the log's own
architecture and once for the list, and scales the measured build by that ratio.

nvcc compiles each file's host code once and its device code once per architecture, so the
ratio is below the number of architectures; the sample is spread evenly over the files sorted by
name (template instances and the big kernels alike), one compile at a time.

    .venv/bin/python bench/cuda_build_archs.py --source /path/to/llama_cpp_python-0.3.36 \
        --measured-minutes 76.5 --cpu-minutes 7

--source: the unpacked sdist (`pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36`).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

DEFAULT_ARCHS = "75-real;80-real;86-real;89-real;90-real;100-real;120-real"
_GENERATE = re.compile(r"^--generate-code=")


def newest_cuda_log() -> Path:
    logs = sorted(Path.home().glob(".cache/hearth/wheels/cuda-*/build.log"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise SystemExit("no CUDA build log under ~/.cache/hearth/wheels (run scripts/llama-wheel-cuda.sh)")
    return logs[-1]


def nvcc_commands(log: Path) -> list[list[str]]:
    """The compile commands of ggml-cuda's .cu files, as the build ran them."""
    commands = []
    for line in log.read_text(errors="replace").splitlines():
        if "/nvcc " in line and " -c " in line and line.rstrip().endswith(".o"):
            words = shlex.split(line.strip().split("] ", 1)[-1])
            commands.append(words)
    return sorted(commands, key=lambda words: words[words.index("-c") + 1])


def generate_flags(archs: str) -> list[str]:
    """CMake's spelling of CMAKE_CUDA_ARCHITECTURES entries like 89-real."""
    flags = []
    for arch in archs.split(";"):
        number = arch.split("-")[0]
        flags.append(f"--generate-code=arch=compute_{number},code=[sm_{number}]")
    return flags


def rewritten(words: list[str], source: Path, out: Path, flags: list[str]) -> list[str]:
    """The command against this source tree, writing into `out`, for these architectures."""
    built_root = re.sub(r"/vendor/llama\.cpp/.*", "", words[words.index("-c") + 1])
    result = []
    for word in words:
        if _GENERATE.match(word):
            if flags:
                result.extend(flags)
                flags = []
            continue
        word = word.replace(built_root, str(source))
        if word.endswith(".o") or word.endswith(".o.d"):
            word = str(out / Path(word).name)
        result.append(word)
    return result


def compile_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="unpacked llama-cpp-python sdist")
    parser.add_argument("--log", type=Path, default=None, help="a one-architecture build's log")
    parser.add_argument("--archs", default=DEFAULT_ARCHS)
    parser.add_argument("--sample", type=int, default=6, help="files to compile")
    parser.add_argument("--measured-minutes", type=float, required=True, help="the logged build's wall time")
    parser.add_argument("--cpu-minutes", type=float, required=True, help="the CPU-only build's wall time")
    args = parser.parse_args()

    commands = nvcc_commands(args.log or newest_cuda_log())
    step = len(commands) / args.sample
    sample = [commands[int(i * step + step / 2)] for i in range(args.sample)]
    one, many, files = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for words in sample:
            logged = [w for w in words if _GENERATE.match(w)]
            files.append(Path(words[words.index("-c") + 1]).name)
            one.append(compile_seconds(rewritten(words, args.source, out, logged)))
            many.append(compile_seconds(rewritten(words, args.source, out, generate_flags(args.archs))))
    ratio = sum(many) / sum(one)
    cuda_part = args.measured_minutes - args.cpu_minutes
    print(json.dumps({
        "files": files, "one_arch_s": [round(t, 1) for t in one], "list_s": [round(t, 1) for t in many],
        "per_file_ratio_median": round(statistics.median(m / o for m, o in zip(many, one)), 2),
        "ratio": round(ratio, 2), "archs": args.archs,
        "estimated_minutes": round(args.cpu_minutes + cuda_part * ratio),
    }))


if __name__ == "__main__":
    main()
