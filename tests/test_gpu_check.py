"""scripts/gpu_check.py where there is no GPU to check (every machine of this project's): it
says why in its one JSON line and fails, rather than measuring the CPU as if it were the GPU."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from app.engine.llama import cuda_driver
from app.engine.llama.cuda_driver import DriverCheck
from app.engine.llama.devices import offload_support

_SPEC = importlib.util.spec_from_file_location("gpu_check", Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gpu_check)


def test_without_a_gpu_the_check_reports_why_and_fails(capsys):
    support = offload_support()
    if support.gpu:
        pytest.skip("this machine has a GPU: scripts/gpu-check.sh measures it")
    assert gpu_check.main([]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "ok": False, "error": f"no GPU to check: {support.describe()}", "device": support.describe()}


def test_the_preflight_stops_the_build_only_where_the_driver_sees_no_gpu(monkeypatch, capsys):
    monkeypatch.setattr(cuda_driver, "check_driver", lambda **_: DriverCheck("no NVIDIA driver found"))
    assert gpu_check.main(["--preflight"]) == 1
    assert json.loads(capsys.readouterr().out) == {"ok": False, "error": "no GPU to check: no NVIDIA driver found"}
    monkeypatch.setattr(cuda_driver, "check_driver", lambda **_: DriverCheck("(not asked)", 13000, None, 1))
    assert gpu_check.main(["--preflight"]) == 0
    assert capsys.readouterr().out == ""
