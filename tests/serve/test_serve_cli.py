"""`hearth serve` as a command: what it refuses before loading anything, and how it stops.

The refusals come before the model loads (a wrong flag costs no wait). Stopping is tested
with a reply in progress: Ctrl+C (SIGINT) and SIGTERM end that reply with an error event at
once, and the process exits 0, having said so.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import openai
import pytest
from support.served import ROOT, Served


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "serve", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env=env)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "gpu-box.local"])
def test_a_host_beyond_this_machine_needs_an_api_key(gemma_path, host):
    result = serve(str(gemma_path), "--host", host)
    assert result.returncode == 2 and result.stdout == ""
    assert "reachable from the network" in result.stderr and "--api-key" in result.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--api-key", "a", "--api-key-env", "B"], "not both"),
    (["--api-key-env", "HEARTH_TEST_UNSET_KEY"], "is not set"),
    (["--api-key", " "], "cannot be empty"),
    (["--port", "70000"], "--port"),
    (["--max-waiting", "-1"], "--max-waiting"),
    (["--threads", "0"], "--threads"),
    (["--ctx", "8"], "--ctx"),
])
def test_flags_that_cannot_be_are_refused_before_the_model_loads(gemma_path, args, says):
    started = time.monotonic()
    result = serve(str(gemma_path), *args)
    assert result.returncode == 2 and says in result.stderr
    assert time.monotonic() - started < 10


def test_a_port_in_use_is_a_one_line_error(gemma_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = serve(str(gemma_path), "--port", str(taken.getsockname()[1]))
    assert result.returncode == 1 and result.stderr.startswith("hearth: error:") and "in use" in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_reply_in_progress_and_exits_0(gemma_path, sig):
    served = Served(gemma_path, "--ctx", "512")
    try:
        client = openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=30)
        stream = client.completions.create(model=served.model_id, prompt="1, 2, 3, 4, 5, 6, 7, 8,",
                                           temperature=0, max_tokens=400, stream=True)
        next(iter(stream))
        started = time.monotonic()
        served.send(sig)
        with pytest.raises(openai.APIError, match="stopped serving"):
            for _ in stream:
                pass
        assert served.wait() == 0
        assert time.monotonic() - started < 5
    finally:
        if served.running:
            served.stop(signal.SIGKILL)
    lines = served.stderr.strip().splitlines()
    assert lines[0].startswith("hearth: serving gemma-3-270m-q4_k_m.gguf on ")
    assert lines[0].endswith(f" at {served.base_url}. Ctrl+C stops.")
    assert lines[-1] == "hearth: stopped serving."
