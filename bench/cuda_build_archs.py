"""What building the CUDA wheel for the default architecture list costs, from a one-architecture build.

A CUDA build of llama.cpp for one GPU architecture took 76.5 minutes on this project's 2-core
machine (shared with other work); the default list (scripts/llama-wheel-cuda.sh) has seven, and
a build of all seven would hold both cores for hours. So this measures the ratio instead, in one run: it re-runs a
spread sample of the nvcc commands from a finished build's log, once for the log's own
architecture and once for the list, and scales the measured build by that ratio (and reports
how much bigger the objects grow, which libggml-cuda.so does with them).

nvcc compiles each file's host code once and its device code once per architecture, so the
ratio is below the number of architectures; the sample is spread evenly over the files sorted by
name (template instances and the big kernels alike), and timed in CPU seconds, so that the
ratio holds while other work shares the machine.

    .venv/bin/python bench/cuda_build_archs.py --source /path/to/llama_cpp_python-0.3.36 \
        --measured-minutes 76.5 --cpu-minutes 7

--source: the unpacked sdist (`pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36`).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import tempfile
from pathlib import Path

DEFAULT_ARCHS = "75-real;80-real;86-real;89-real;90-real;100-real;120-real"  # scripts/llama-wheel-cuda.sh's ARCHS
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
    """CMake's spelling of CMAKE_CUDA_ARCHITECTURES entries of the form 89-real (machine code
    only, as the wheel is built; `native` or PTX entries are not what it measures)."""
    flags = []
    for arch in archs.split(";"):
        if not arch.endswith("-real") or not arch[:-5].isdigit():
            raise SystemExit(f"--archs takes entries like 89-real, not {arch!r}")
        number = arch[:-5]
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


def compile_cost(command: list[str]) -> tuple[float, int]:
    """CPU seconds (user and system) the compile and its children took, unlike wall time not
    stretched by whatever else runs on the machine meanwhile, and the object's bytes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, Path(command[command.index("-o") + 1]).stat().st_size


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
    one, many, files, sizes = [], [], [], {"one": 0, "list": 0}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for words in sample:
            logged = [w for w in words if _GENERATE.match(w)]
            files.append(Path(words[words.index("-c") + 1]).name)
            for kind, flags, times in (("one", logged, one), ("list", generate_flags(args.archs), many)):
                seconds, size = compile_cost(rewritten(words, args.source, out, flags))
                times.append(seconds)
                sizes[kind] += size
    ratio = sum(many) / sum(one)
    cuda_part = args.measured_minutes - args.cpu_minutes
    cores = os.cpu_count() or 1
    per_file = {"one": statistics.mean(one), "list": statistics.mean(many)}
    print(json.dumps({
        "files": files, "one_arch_cpu_s": [round(t, 1) for t in one], "list_cpu_s": [round(t, 1) for t in many],
        "ratio": round(ratio, 2), "archs": args.archs,
        # libggml-cuda.so grows with the device code: the objects' size ratio.
        "object_size_ratio": round(sizes["list"] / sizes["one"], 2),
        # The logged build's wall time, its CUDA part scaled by the ratio.
        "estimated_minutes": round(args.cpu_minutes + cuda_part * ratio),
        # From the sample alone, on this machine's cores kept busy: every .cu file as the sample's mean.
        "cu_files": len(commands),
        "sampled_one_arch_minutes": round(args.cpu_minutes + per_file["one"] * len(commands) / cores / 60),
        "sampled_list_minutes": round(args.cpu_minutes + per_file["list"] * len(commands) / cores / 60),
    }))

if __name__ == "__main__":
    main()
