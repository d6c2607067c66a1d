"""The CUDA bundle (`make test CUDA=1` builds dist/hearth-cuda/ for its bundle tests): it carries
exactly the CUDA runtime it needs, with the licence notices, and on a machine without an NVIDIA
driver (every machine of this project's) it starts offline and runs on the CPU, saying why.

Skipped unless the bundle being built is the CUDA one (HEARTH_BUNDLE=hearth-cuda, which
`make ... CUDA=1` exports) and slow tests are on.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import pytest
from support.bundle_build import build as bundle_build

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist" / "hearth-cuda"
LIB = DIST / "_internal" / "llama_cpp" / "lib"
SELF_TEST_TIMEOUT_S = 600
CUDA_RUNTIME = ("libcudart.so.", "libcublas.so.", "libcublasLt.so.")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("HEARTH_SLOW_TESTS") != "1", reason="slow: set HEARTH_SLOW_TESTS=1"),
    pytest.mark.skipif(os.environ.get("HEARTH_BUNDLE") != "hearth-cuda",
                       reason="the CUDA bundle is built and tested by `make test CUDA=1`"),
]


@pytest.fixture(scope="module")
def bundle() -> Path:
    build = bundle_build.wait()
    assert build.returncode == 0, f"make bundle CUDA=1 failed:\n{build.output[-6000:]}"
    return DIST / "hearth"


def _driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_the_cuda_bundle_carries_cudart_and_cublas_with_their_licences_and_no_driver(bundle):
    names = {p.name for p in LIB.iterdir()}
    assert any(n.startswith("libggml-cuda.so") for n in names)
    for prefix in CUDA_RUNTIME:
        assert len([n for n in names if n.startswith(prefix)]) == 1, f"one {prefix}* in {sorted(names)}"
    everything = list(DIST.rglob("*"))
    assert not [p for p in everything if p.name.startswith("libcuda.so")], "the driver belongs to the machine"
    assert not [p for p in everything if p.is_symlink() and not p.exists()], "no link may dangle"
    # One copy of each CUDA library, beside libggml-cuda.so (where its RUNPATH $ORIGIN looks);
    # any other name for it is a link to that copy.
    for prefix in CUDA_RUNTIME:
        named = [p for p in everything if p.name.startswith(prefix)]
        assert [p.parent for p in named if not p.is_symlink()] == [LIB]
        assert {p.resolve().parent for p in named} == {LIB.resolve()}
    licences = sorted(p.name for p in (DIST / "_internal" / "licenses").iterdir())
    assert licences == ["nvidia-cublas-License.txt", "nvidia-cuda-runtime-License.txt"]
    assert all("NVIDIA" in (DIST / "_internal" / "licenses" / n).read_text(errors="replace") for n in licences)


def test_without_a_driver_the_cuda_bundle_runs_offline_on_the_cpu_and_says_why(bundle, tmp_path):
    if _driver_present():
        pytest.skip("an NVIDIA driver is installed here: scripts/gpu-check.sh checks the GPU path")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "LD_LIBRARY"))}
    env.update(QT_QPA_PLATFORM="offscreen", HEARTH_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1")
    run = subprocess.run(["unshare", "-n", str(bundle), "--self-test"], env=env, capture_output=True, text=True,
                         timeout=SELF_TEST_TIMEOUT_S)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "self-test passed" in run.stdout
    assert "CPU (" in run.stdout and "; CUDA build; no NVIDIA driver found)" in run.stdout, run.stdout
