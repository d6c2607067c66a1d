"""Which backend a build of llama.cpp runs on, and why a GPU build runs on the CPU.

The driver is faked (no NVIDIA driver or GPU is on these machines); the registry test runs on
the real llama.cpp of whichever venv runs it (.venv: the CPU build; .venv-cuda: the CUDA one).
"""

from __future__ import annotations

import ctypes

import pytest

from app.engine.llama import cuda_driver, devices
from app.engine.llama.cuda_driver import DriverCheck, check_driver, loaded_runtime_version
from app.engine.llama.devices import judge_offload
from app.engine.types import OffloadSupport


def _no_driver_asked() -> DriverCheck:
    raise AssertionError("the driver is asked only when a CUDA build has no device")


class FakeDriver:
    """libcuda.so.1's few entry points, answering as a given machine would."""

    def __init__(self, init: int = 0, devices: int = 1, version: int = 13000) -> None:
        self.init, self.devices, self.version = init, devices, version

    def cuInit(self, flags: int) -> int:  # noqa: N802 (the C name)
        return self.init

    def cuDeviceGetCount(self, ref) -> int:  # noqa: N802
        ref._obj.value = self.devices
        return 0

    def cuDriverGetVersion(self, ref) -> int:  # noqa: N802
        ref._obj.value = self.version
        return 0


def _loader(driver: FakeDriver | None):
    def load(name: str):
        assert name == "libcuda.so.1"
        if driver is None:
            raise OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
        return driver
    return load


def test_a_cpu_build_runs_on_the_cpu_with_no_reason_to_give():
    support = judge_offload([("CPU", 1)], _no_driver_asked)
    assert support == OffloadSupport("CPU", False, None)
    assert support.describe() == "CPU build"


def test_a_cuda_build_that_sees_a_gpu_uses_it():
    support = judge_offload([("CUDA", 1), ("CPU", 1)], _no_driver_asked)
    assert support == OffloadSupport("CUDA", True, None)


def test_a_cuda_build_without_a_device_says_why_from_the_driver():
    support = judge_offload([("CUDA", 0), ("CPU", 1)], lambda: check_driver(_loader(None)))
    assert support == OffloadSupport("CUDA", False, "CUDA build; no NVIDIA driver found")
    assert support.describe() == "CUDA build; no NVIDIA driver found"


def test_another_gpu_backend_without_a_device_names_itself():
    support = judge_offload([("Vulkan", 0), ("CPU", 1)], _no_driver_asked)
    assert support.reason == "Vulkan build; no Vulkan device"


@pytest.mark.parametrize(("driver", "reason"), [
    (None, "no NVIDIA driver found"),
    (FakeDriver(init=100), "no CUDA device"),
    (FakeDriver(devices=0), "no CUDA device"),
    (FakeDriver(init=999), "the NVIDIA driver did not start (CUDA error 999)"),
    (FakeDriver(version=12040), "the NVIDIA driver supports CUDA 12.4, older than this build's CUDA 13.0: update the driver"),
    (FakeDriver(version=13020, devices=2), "the CUDA runtime could not use the 2 device(s) the driver sees (driver: CUDA 13.2)"),
])
def test_the_driver_check_tells_each_case_apart(driver, reason):
    check = check_driver(_loader(driver), runtime_version=lambda: 13000)
    assert check.reason == reason
    assert check.devices == (driver.devices if driver is not None and driver.init == 0 else 0)


def test_the_runtime_version_is_read_from_the_libcudart_this_process_loaded(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 fd:00 1 /opt/x/libggml-cuda.so\n"
                    "7f02-7f03 r-xp 00000000 fd:00 2 /opt/x/libcudart.so.13\n"
                    "7f04-7f05 r--p 00001000 fd:00 2 /opt/x/libcudart.so.13\n")
    asked = []

    class Runtime:
        def cudaRuntimeGetVersion(self, ref) -> int:  # noqa: N802
            ref._obj.value = 13000
            return 0

    def load(path: str):
        asked.append(path)
        return Runtime()

    assert loaded_runtime_version(maps, load) == 13000
    assert asked == ["/opt/x/libcudart.so.13"]
    assert loaded_runtime_version(tmp_path / "absent") is None


def test_the_real_registry_gives_the_answer_this_build_should():
    """In the CPU venv: a CPU build. In a CUDA venv on a machine without a driver (this one): the
    CUDA backend is registered with no device, and the reason is the driver's absence."""
    registries = dict(devices.backend_registries())
    assert registries.get("CPU") == 1
    support = devices.offload_support()
    assert support.gpu == devices.supports_gpu_offload()
    if "CUDA" not in registries:
        assert support == OffloadSupport("CPU", False, None)
    elif registries["CUDA"] == 0:
        assert support.reason == f"CUDA build; {check_driver().reason}"
        try:
            ctypes.CDLL(cuda_driver.DRIVER_LIBRARY)
        except OSError:
            assert support.reason == "CUDA build; no NVIDIA driver found"
    else:
        assert support == OffloadSupport("CUDA", True, None)
