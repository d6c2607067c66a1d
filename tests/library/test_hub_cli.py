"""`hearth pull` end to end against the fake Hub, found through HF_ENDPOINT as in real use."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fake_hub import QWEN_REPO

from app.cli.pull import add_pull_arguments, run_pull


def pull(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="hearth pull")
    add_pull_arguments(parser)
    return run_pull(parser.parse_args(list(argv)))


@pytest.fixture
def endpoint(hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    return hub.url


def test_pull_downloads_a_quant_and_draws_progress(qwen, endpoint, tmp_path, capsys, tiny_gguf):
    assert pull(QWEN_REPO, "--quant", "Q4_K_M", "--dest", str(tmp_path)) == 0

    out, err = capsys.readouterr()
    assert Path(out.strip()) == tmp_path / "Qwen3-0.6B-Q4_K_M.gguf"
    assert Path(out.strip()).read_bytes() == tiny_gguf
    assert "Downloading Qwen3-0.6B-Q4_K_M.gguf (Q4_K_M, 65.8 KB)" in err
    assert "[########################] 100%  65.8 KB / 65.8 KB" in err
    assert "/s  ETA" in err


def test_pull_defaults_to_hearths_models_folder(qwen, endpoint, tmp_path, capsys):
    assert pull(QWEN_REPO, "--file", "Qwen3-0.6B-IQ2_XS.gguf") == 0
    out = capsys.readouterr().out.strip()
    assert Path(out) == tmp_path / "hearth-home" / "data" / "models" / "Qwen3-0.6B-IQ2_XS.gguf"


def test_pull_failure_is_one_line_and_exit_status_1(qwen, endpoint, tmp_path, capsys):
    assert pull(QWEN_REPO, "--quant", "Q2_K", "--dest", str(tmp_path)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("hearth pull: Qwen/Qwen3-0.6B-GGUF has no Q2_K model. It has: ")


def test_pull_of_a_malformed_repo_name_says_how_to_write_it(endpoint, capsys):
    assert pull("not a repo") == 1
    assert capsys.readouterr().err == (
        "hearth pull: 'not a repo' is not a Hugging Face repository name; write it as OWNER/NAME.\n"
    )


def test_pull_as_a_program(qwen, endpoint, tmp_path, tiny_gguf):
    result = subprocess.run(
        [sys.executable, "-m", "app.cli.pull", QWEN_REPO, "--quant", "Q4_K_M", "--dest", str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=os.environ.copy(),
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).read_bytes() == tiny_gguf
    assert "100%" in result.stderr


@pytest.mark.parametrize("loop", ["file", "api"])
def test_pull_through_a_redirect_loop_is_one_line_not_a_traceback(qwen, hub, endpoint, tmp_path, capsys, loop):
    if loop == "file":
        qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].redirect_loop = True
    else:
        hub.redirect_api = True

    assert pull(QWEN_REPO, "--quant", "Q4_K_M", "--dest", str(tmp_path)) == 1

    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("hearth pull: Could not ") and "kept redirecting the request in a loop" in err


def test_pull_of_a_web_page_says_what_it_is(qwen, endpoint, tmp_path, capsys):
    qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].served_instead = b"<html><body>Error 500</body></html>"
    qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].content_type = "text/html"

    assert pull(QWEN_REPO, "--quant", "Q4_K_M", "--dest", str(tmp_path)) == 1

    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("hearth pull: Could not download Qwen3-0.6B-Q4_K_M.gguf: the server sent a web page")


def test_pull_names_at_most_a_few_models_of_a_huge_repository(hub, endpoint, capsys):
    hub.add_repo("o/huge", {f"model-{index}-Q4_K_M.gguf": b"GGUF" for index in range(500)})
    assert pull("o/huge", "--quant", "Q8_0") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith("and 492 more.")
