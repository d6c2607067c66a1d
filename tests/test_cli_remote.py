"""`hearth models --server` and `hearth chat --server`, run as a user runs them (`python -m app`
in a subprocess) against llama-cpp-python's own server and the misbehaving stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import openai
from support.remote_servers import free_port, llama_server, stand_in  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[1]
STATS_KEYS = {"prompt_tokens", "evaluated_prompt_tokens", "completion_tokens", "ttft_s", "tokens_per_s", "stop_reason",
              "device"}


def hearth(*args, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT,
                          timeout=120, env={**os.environ, **(env or {})})


def test_models_lists_the_servers_models_as_json_lines(llama_server):  # noqa: F811
    result = hearth("models", "--server", llama_server.base_url)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [llama_server.model_id]


def test_chat_streams_what_the_openai_client_reads_with_the_same_stats_line(llama_server):  # noqa: F811
    result = hearth("chat", "--server", llama_server.base_url, llama_server.model_id, "What is a lighthouse?",
                    "--preset", "Precise", "--max-tokens", "20", "--seed", "3", "--stats", "json")
    assert result.returncode == 0, result.stderr.decode()
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="unused")
    expected = client.chat.completions.create(
        model=llama_server.model_id, messages=[{"role": "user", "content": "What is a lighthouse?"}],
        temperature=0.0, top_p=1.0, max_tokens=20, seed=3, extra_body={"top_k": 1, "min_p": 0.0, "repeat_penalty": 1.0},
    ).choices[0].message.content
    client.close()
    assert result.stdout.decode() == expected + "\n" and expected.strip()
    stats = json.loads(result.stderr.decode().splitlines()[-1])
    assert set(stats) == STATS_KEYS and stats["stop_reason"] == "length"
    assert stats["device"] == f"127.0.0.1:{llama_server.port} (remote)" and stats["tokens_per_s"] > 0


def test_the_key_comes_from_the_named_environment_variable(stand_in):  # noqa: F811
    args = ("chat", "--server", stand_in.url("auth"), "--api-key-env", "LAB_KEY", "stand-in", "Hi", "--stats", "json")
    result = hearth(*args, env={"LAB_KEY": "good-key"})
    assert result.returncode == 0 and result.stdout == b"Hello there.\n"
    stats = json.loads(result.stderr.decode().splitlines()[-1])
    assert (stats["prompt_tokens"], stats["completion_tokens"], stats["stop_reason"]) == (11, 3, "end_of_turn")
    assert all(request.headers["Authorization"] == "Bearer good-key" for request in stand_in.requests)
    unset = hearth(*args, env={"LAB_KEY": ""})
    assert unset.returncode == 2 and b"LAB_KEY is not set" in unset.stderr
    wrong = hearth(*args, env={"LAB_KEY": "bad-key"})
    assert wrong.returncode == 1 and b"refused the API key (401)" in wrong.stderr


def test_failures_exit_1_with_the_reason_and_a_cut_reply_keeps_its_text(stand_in):  # noqa: F811
    refused = hearth("models", "--server", f"http://127.0.0.1:{free_port()}/v1")
    assert refused.returncode == 1 and b"refused the connection" in refused.stderr and refused.stdout == b""
    cut = hearth("chat", "--server", stand_in.url("cut"), "stand-in", "Hi", "--stats", "json")
    assert cut.returncode == 1 and cut.stdout == b"Hello there\n"
    assert json.loads(cut.stderr.decode().splitlines()[0])["stop_reason"] == "error"
    assert b"the reply is cut short" in cut.stderr


def test_options_of_a_local_model_are_refused_with_a_server(stand_in):  # noqa: F811
    result = hearth("chat", "--server", stand_in.url("ok"), "stand-in", "Hi", "--ctx", "4096")
    assert result.returncode == 2 and b"--ctx does not apply" in result.stderr
    result = hearth("models", "--server", "gpu-box:8000")
    assert result.returncode == 2 and b"http://host:port/v1" in result.stderr
